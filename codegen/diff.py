"""What changed between two protocol versions, at protocol level (methods, defs, fields)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .extension import ExtensionProtocol
from .ir import Method, Protocol

METHOD_FACETS = (
    "kind",
    "direction",
    "params",
    "params_required",
    "result",
    "may_require_input",
    "capability",
    "deprecated",
)


def diff_extension(core: Protocol, ext: ExtensionProtocol) -> dict[str, Any]:
    """What an extension does to the version it is read on: the methods it adds, the core rows it
    changes (augments) and the core methods it removes; the defs it adds, and those it repeats
    from the version that differ. The version's other methods and defs are not the extension's
    business, so they are left out (not reported as removed)."""
    shared = replace(
        core,
        methods={m: core.methods[m] for m in sorted(set(ext.augments) | set(ext.removes_present)) if m in core.methods},
        defs={name: info for name, info in core.defs.items() if name in ext.defs},
    )
    kept = replace(ext, methods={m: row for m, row in ext.methods.items() if m not in ext.removes_present})
    result = diff_protocols(shared, kept)
    result["extension"] = {
        "id": ext.ext_id,
        "release": ext.release,
        "repeats": len(ext.repeats),
        "differs": list(ext.differs),
        "differs_through": list(ext.differs_through),
    }
    return result


def diff_protocols(old: Protocol, new: Protocol) -> dict[str, Any]:
    """A JSON-ready description of the changes from `old` to `new`."""
    methods_changed = []
    for name in sorted(set(old.methods) & set(new.methods)):
        changes = _method_changes(old.methods[name], new.methods[name])
        if changes:
            methods_changed.append({"method": name, "changes": changes})

    defs_changed = []
    for name in sorted(set(old.defs) & set(new.defs)):
        a, b = old.defs[name], new.defs[name]
        entry: dict[str, Any] = {"def": name}
        if a.shape != b.shape:
            entry["shape"] = [a.shape, b.shape]
        fa = {f.name: f for f in a.fields}
        fb = {f.name: f for f in b.fields}
        added = [{"name": n, "type": fb[n].type, "required": fb[n].required} for n in sorted(set(fb) - set(fa))]
        removed = [{"name": n, "type": fa[n].type, "required": fa[n].required} for n in sorted(set(fa) - set(fb))]
        changed = []
        for n in sorted(set(fa) & set(fb)):
            change: dict[str, Any] = {}
            if fa[n].type != fb[n].type:
                change["type"] = [fa[n].type, fb[n].type]
            if fa[n].required != fb[n].required:
                change["required"] = [fa[n].required, fb[n].required]
            if change:
                changed.append({"name": n, **change})
        if added:
            entry["fields_added"] = added
        if removed:
            entry["fields_removed"] = removed
        if changed:
            entry["fields_changed"] = changed
        if len(entry) > 1:
            defs_changed.append(entry)

    return {
        "from": old.label,
        "to": new.label,
        "sha256": [old.sha256, new.sha256],
        "era": [old.era, new.era],
        "methods": {
            "added": [new.methods[m].as_json() for m in sorted(set(new.methods) - set(old.methods))],
            "removed": [old.methods[m].as_json() for m in sorted(set(old.methods) - set(new.methods))],
            "changed": methods_changed,
        },
        "defs": {
            "added": sorted(set(new.defs) - set(old.defs)),
            "removed": sorted(set(old.defs) - set(new.defs)),
            "changed": defs_changed,
        },
    }


def has_changes(d: dict[str, Any]) -> bool:
    """Does the diff show any protocol-level change (not only the bytes of the files)?"""
    return d["era"][0] != d["era"][1] or any(d[part][kind] for part in ("methods", "defs") for kind in d[part])


def _method_changes(a: Method, b: Method) -> dict[str, list[Any]]:
    ja, jb = a.as_json(), b.as_json()
    return {facet: [ja[facet], jb[facet]] for facet in METHOD_FACETS if ja[facet] != jb[facet]}


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return f"{value.get('side')}:{value.get('path')}"
    if value is None:
        return "-"
    return str(value)


def format_diff(d: dict[str, Any]) -> str:
    """The diff as text for people."""
    return "\n".join([*_header_lines(d), "", *_method_lines(d["methods"]), "", *_def_lines(d["defs"])])


def _header_lines(d: dict[str, Any]) -> list[str]:
    """The versions and eras, and whether the files differ at all."""
    lines = [f"{d['from']} -> {d['to']} (era {d['era'][0]} -> {d['era'][1]})"]
    ext = d.get("extension")
    if ext is not None:
        differ = ", ".join(ext["differs"]) or "none"
        through = f" (and through them: {', '.join(ext['differs_through'])})" if ext["differs_through"] else ""
        lines.append(f"the extension repeats {ext['repeats']} defs of {d['from']}; differ: {differ}{through}")
        return lines
    sha = d.get("sha256", ["", ""])
    if sha[0] == sha[1]:
        lines.append(f"the files are identical (sha256 {sha[0][:12]})")
        return lines
    lines.append(f"sha256 {sha[0][:12]} -> {sha[1][:12]}")
    if not has_changes(d):
        lines.append("the files differ, but not in methods, defs or fields (descriptions or layout only)")
    return lines


def _method_lines(m: dict[str, Any]) -> list[str]:
    lines = [f"Methods: {len(m['added'])} added, {len(m['removed'])} removed, {len(m['changed'])} changed"]
    lines += [f"  + {r['method']}  ({r['kind']}, {r['direction']}, result {_fmt(r['result'])})" for r in m["added"]]
    lines += [f"  - {r['method']}  ({r['kind']}, {r['direction']})" for r in m["removed"]]
    for row in m["changed"]:
        lines.append(f"  ~ {row['method']}")
        lines += [f"      {facet}: {_fmt(old)} -> {_fmt(new)}" for facet, (old, new) in row["changes"].items()]
    return lines


def _def_lines(defs: dict[str, Any]) -> list[str]:
    lines = [f"Defs: {len(defs['added'])} added, {len(defs['removed'])} removed, {len(defs['changed'])} changed"]
    lines += [f"  + {name}" for name in defs["added"]]
    lines += [f"  - {name}" for name in defs["removed"]]
    for row in defs["changed"]:
        lines.append(f"  ~ {row['def']}")
        if "shape" in row:
            lines.append(f"      shape: {row['shape'][0]} -> {row['shape'][1]}")
        lines += [f"      + {_field(f)}" for f in row.get("fields_added", [])]
        lines += [f"      - {_field(f)}" for f in row.get("fields_removed", [])]
        lines += [f"      ~ {f['name']}: {_field_change(f)}" for f in row.get("fields_changed", [])]
    return lines


def _field(f: dict[str, Any]) -> str:
    return f"{f['name']}: {f['type']}{' (required)' if f['required'] else ''}"


def _field_change(f: dict[str, Any]) -> str:
    parts = []
    if "type" in f:
        parts.append(f"type {f['type'][0]} -> {f['type'][1]}")
    if "required" in f:
        parts.append("required" if f["required"][1] else "optional")
    return "; ".join(parts)
