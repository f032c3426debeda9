#!/usr/bin/env bash
# Install headless Chromium for tests/test_report_browser.py (Debian/Ubuntu, run as root).
# Idempotent: does nothing when a chromium binary is already on PATH.
set -euo pipefail
command -v chromium || { apt-get update && apt-get install -y --no-install-recommends chromium; }
