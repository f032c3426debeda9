"""User-facing errors: one clear message, exit code 2, no traceback.

Every stage raises its own precise error (TemplateError, GraphError, MappingError,
SpecError); the CLI turns them into a UserError-style message naming the file,
the field or node, what was wrong and what is allowed.
"""

from __future__ import annotations

EXIT_USER_ERROR = 2


class UserError(Exception):
    """Bad input from the user. ``where`` is 'file:line: field' or similar; printed before the message."""

    def __init__(self, message: str, where: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message
