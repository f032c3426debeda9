"""Loading a spec: YAML text with line numbers -> a validated ``Spec``, or one located ``SpecError``.

One parse yields both the plain data (for pydantic) and the node tree (for line numbers);
the schema is checked first, then everything it cannot say (``dse.spec.checks``).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from dse.spec.checks import check_semantics
from dse.spec.messages import Loc, SpecError, describe, error_from_pydantic, first_error, format_loc
from dse.spec.schema import Spec

MAX_SPEC_BYTES = 1 << 20  # 1 MiB: hand-written specs are a few kB
MAX_NODES = 100_000  # values in the document once YAML aliases are expanded
MAX_DEPTH = 64  # nesting levels (the schema needs fewer than ten)


def load_spec(path: str | Path) -> Spec:
    """Read and validate a YAML spec file; raises SpecError on any problem with it."""
    shown = str(path)
    try:
        size = Path(path).stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(
                f"is {size:,} bytes; a spec is at most {MAX_SPEC_BYTES:,} bytes (put large data in a model file)", shown
            )
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(
            f"spec file not found (looked for {Path(path).resolve()}); give an existing YAML file", shown
        ) from None
    except IsADirectoryError:
        raise SpecError("is a directory, not a spec file; give a YAML file", shown) from None
    except UnicodeDecodeError as err:
        raise SpecError(f"is not UTF-8 text ({err.reason}); give a YAML text file", shown) from None
    except OSError as err:
        raise SpecError(f"cannot be read ({err.strerror}); give a readable YAML file", shown) from None
    return parse_spec(text, path)


def parse_spec(text: str, path: str | Path = "<string>") -> Spec:
    """Validate spec text; ``path`` names it in messages and anchors relative model paths."""
    shown = str(path)
    root, data = _compose(text, shown)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as err:
        raise error_from_pydantic(err, Spec, root, shown) from None
    spec.attach_source(Path(path), root)
    problems = check_semantics(spec)
    if problems:
        raise first_error(problems, root, shown)
    return spec


def _compose(text: str, shown: str) -> tuple[yaml.Node, dict]:
    """The node tree (for line numbers) and the plain data, from one parse."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(f"is {len(text):,} characters; a spec is at most {MAX_SPEC_BYTES:,}", shown)
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader already refuses control characters
        root = loader.get_single_node()
        if root is not None:
            _check_expanded_size(root, shown)
        data = loader.construct_document(root) if root is not None else None
    except RecursionError:
        raise SpecError(f"nested too deeply; a spec nests at most {MAX_DEPTH} levels", shown) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        what = ": ".join(p for p in (err.context, err.problem) if p)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise SpecError(f"YAML syntax error: {what}{column}; the spec must be valid YAML", shown, line) from None
    except yaml.YAMLError as err:
        raise SpecError(f"YAML error: {err}; the spec must be valid YAML", shown) from None
    finally:
        if loader is not None:
            loader.dispose()
    top_keys = ", ".join(Spec.model_fields)
    if root is None:
        raise SpecError(f"the spec is empty; write a mapping with the keys: {top_keys}", shown, 1)
    if not isinstance(root, yaml.MappingNode) or not isinstance(data, dict):
        raise SpecError(
            f"the top level is {describe(data)}, not a mapping; write a mapping with the keys: {top_keys}",
            shown,
            root.start_mark.line + 1,
        )
    _check_duplicate_keys(root, (), shown)
    return root, data


def _check_expanded_size(root: yaml.Node, shown: str) -> None:
    """Refuse a document whose aliases expand it past ``MAX_NODES`` nodes (a "billion laughs" bomb) or
    that nests deeper than ``MAX_DEPTH``: every later walk of the tree (validation, line lookup) would
    otherwise visit each expansion. Counted once per distinct node, so the check itself is linear."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if depth > MAX_DEPTH:
            line = node.start_mark.line + 1
            raise SpecError(f"nested too deeply; a spec nests at most {MAX_DEPTH} levels", shown, line)
        children = _children(node)
        if not children_done:
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children if id(child) not in sizes)
            continue
        total = 1 + sum(sizes.get(id(child), 1) for child in children)
        if total > MAX_NODES:
            raise SpecError(
                f"expands to more than {MAX_NODES:,} values (aliases of aliases); write the spec out plainly",
                shown,
                node.start_mark.line + 1,
            )
        sizes[id(node)] = total


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_duplicate_keys(node: yaml.Node, loc: Loc, shown: str) -> None:
    """PyYAML silently keeps the last of two equal keys; a spec that repeats a key is a mistake."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in seen:
                    field = format_loc((*loc, key))
                    raise SpecError(
                        f"key given twice (first on line {seen[key]}); give each key once", shown, line, field
                    )
                seen[key] = line
            _check_duplicate_keys(value_node, (*loc, key if key is not None else "?"), shown)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicate_keys(item, (*loc, i), shown)
