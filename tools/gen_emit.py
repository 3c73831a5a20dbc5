"""Straight-line encode/decode function bodies for one struct at one version.

Used by ``tools/gen_messages.py``. Each function is specialised to a single version and
flexibility, so the generated code never interprets field metadata at run time: it packs
runs of fixed-width fields with one precompiled ``struct.Struct``, inlines one-byte varint
fast paths, and calls nested struct functions directly. The wire rules follow Kafka's
``MessageDataGenerator``: compact (uvarint length + 1) strings, bytes and arrays in flexible
versions; int16/int32 lengths with -1 for null otherwise; a nullable struct is preceded by an
int8 marker (-1 null, 1 present); tagged fields go in ascending tag order at the end of each
flexible struct and are written only when different from their default.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from gen_spec import FIXED_CODES, FieldSpec, StructSpec

FIXED_SIZES = {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8, "16s": 16}


class Module:
    """Per-module state: precompiled struct formats and deduplicated function names."""

    def __init__(self) -> None:
        self.formats: set[str] = set()
        self.functions: dict[str, str] = {}  # body text -> function name
        self.defs: list[str] = []
        self.enc_names: dict[tuple[int, int], str] = {}
        self.dec_names: dict[tuple[int, int], str] = {}
        #: ids of structs holding a records field (directly or nested): their encoders
        #: take and return ``out`` and collect record payloads in ``parts``.
        self.chunked: set[int] = set()

    def fmt(self, codes: list[str]) -> str:
        """Name suffix of the precompiled ``struct.Struct`` for ``codes``."""
        joined = "".join(codes)
        self.formats.add(joined)
        return fmt_suffix(joined)

    def define(self, prefix: str, params: str, body: list[str]) -> str:
        text = params + "\n" + "\n".join(body)
        name = self.functions.get(text)
        if name is None:
            name = f"{prefix}{len(self.defs)}"
            self.functions[text] = name
            indented = "\n".join(("    " + line) if line else "" for line in body)
            self.defs.append(f"def {name}({params}):\n{indented}\n")
        return name


def fmt_suffix(codes: str) -> str:
    return codes.replace("16s", "u").replace("?", "o")


def default_literal(f: FieldSpec, struct_default: Callable[[StructSpec], str]) -> str:
    """Python expression for a field's default (fresh object for lists and structs)."""
    raw = f.default
    is_null = raw == "null"
    if f.is_array:
        return "None" if is_null else "[]"
    if f.struct is not None:
        return "None" if is_null else struct_default(f.struct)
    t = f.type
    if t == "records":
        return "None"
    if t in ("string", "bytes"):
        if is_null:
            return "None"
        if t == "bytes":
            return 'b""'
        return json.dumps("" if raw is None else str(raw))
    if t == "bool":
        return "True" if str(raw).lower() == "true" else "False"
    if t == "uuid":
        return "UUID_ZERO"
    if t == "float64":
        return repr(float(raw)) if raw is not None else "0.0"
    if raw is None or raw == "":
        return "0"
    return repr(int(str(raw), 0))


def type_hint(f: FieldSpec) -> str:
    if f.is_array:
        inner = f.struct.cls_name if f.struct is not None else _prim_hint(f.elem)
        hint = f"list[{inner}]"
    elif f.struct is not None:
        hint = f.struct.cls_name
    else:
        hint = _prim_hint(f.type)
    if not f.nullable.empty or f.type == "records":
        hint += " | None"
    return hint


def _prim_hint(t: str) -> str:
    return {"bool": "bool", "string": "str", "bytes": "bytes", "records": "Buffer",
            "uuid": "bytes", "float64": "float"}.get(t, "int")


# -- encoding ------------------------------------------------------------------------------


class _VersionBody:
    """What the encoder and decoder of one struct version share: the version, and whether a
    field uses the compact (flexible) encoding in it."""

    def __init__(self, mod: Module, struct: StructSpec, version: int, flexible: bool) -> None:
        self.mod = mod
        self.struct = struct
        self.version = version
        self.flexible = flexible

    def compact(self, f: FieldSpec) -> bool:
        if f.flexible_override is not None:
            return self.version in f.flexible_override
        return self.flexible


class Encoder(_VersionBody):
    def body(self) -> list[str]:
        v = self.version
        lines: list[str] = []
        run: list[FieldSpec] = []
        regular = [f for f in self.struct.fields if v in f.versions and v not in f.tagged]
        for f in regular:
            if not f.is_array and f.type in FIXED_CODES:
                run.append(f)
                continue
            lines += self.fixed_run(run)
            run = []
            lines += self.field(f, f"o.{f.attr}")
        lines += self.fixed_run(run)
        if self.flexible:
            lines += self.tagged()
        if id(self.struct) in self.mod.chunked:
            lines.append("return out")
        return lines or ["pass"]

    def fixed_run(self, run: list[FieldSpec]) -> list[str]:
        if not run:
            return []
        suffix = self.mod.fmt([FIXED_CODES[f.type] for f in run])
        args = ", ".join(f"o.{f.attr}" for f in run)
        return [f"out += _P_{suffix}({args})"]

    def length(self, expr: str, compact: bool, wide: bool) -> list[str]:
        if compact:
            return [f"n = {expr} + 1", "out += _UV[n] if n < 128 else _uvb(n)"]
        return [f"out += _P_{self.mod.fmt(['i' if wide else 'h'])}({expr})"]

    def null(self, compact: bool, wide: bool) -> str:
        if compact:
            return "out.append(0)"
        return 'out += b"\\xff\\xff\\xff\\xff"' if wide else 'out += b"\\xff\\xff"'

    def field(self, f: FieldSpec, src: str) -> list[str]:
        compact = self.compact(f)
        nullable = self.version in f.nullable or f.type == "records"
        val = "x" if nullable else src
        if f.is_array:
            body = self.array(f, compact)
            wide = True
        elif f.struct is not None:
            return self.struct_field(f, src, nullable)
        elif f.type == "string":
            body = [f"b = {val}.encode()", *self.length("len(b)", compact, False), "out += b"]
            wide = False
        elif f.type == "bytes":
            body = [f"b = {val}", *self.length("len(b)", compact, True), "out += b"]
            wide = True
        elif f.type == "records":
            # Record data is handed over as its own chunk, never copied into ``out``.
            body = [f"b = {val}", *self.length("len(b)", compact, True), "parts.append(out)",
                    "parts.append(b)", "out = bytearray()"]
            wide = True
        else:  # a fixed-width value written on its own (tagged fields)
            suffix = self.mod.fmt([FIXED_CODES[f.type]])
            return [f"out += _P_{suffix}({src})"]
        var = "a" if f.is_array else "x"
        lines = [f"{var} = {src}"] if (nullable or f.is_array) and src != var else []
        if nullable:
            lines += [f"if {var} is None:", "    " + self.null(compact, wide), "else:"]
            lines += ["    " + line for line in body]
        else:
            lines += body
        return lines

    def call(self, struct: StructSpec, arg: str) -> str:
        fn = self.mod.enc_names[(id(struct), self.version)]
        if id(struct) in self.mod.chunked:
            return f"out = {fn}({arg}, out, parts)"
        return f"{fn}({arg}, out)"

    def struct_field(self, f: FieldSpec, src: str, nullable: bool) -> list[str]:
        assert f.struct is not None
        if not nullable:
            return [self.call(f.struct, src)]
        # Kafka marks a nullable struct with an int8: -1 null, 1 present.
        head = [f"x = {src}"] if src != "x" else []
        return [*head, "if x is None:", "    out.append(255)", "else:", "    out.append(1)",
                f"    {self.call(f.struct, 'x')}"]

    def array(self, f: FieldSpec, compact: bool) -> list[str]:
        lines = self.length("len(a)", compact, True)
        elem = f.elem
        if f.struct is not None:
            lines += ["for e in a:", f"    {self.call(f.struct, 'e')}"]
        elif elem == "uuid":
            lines += ['out += b"".join(a)']
        elif elem in FIXED_CODES:
            lines += [f'out += _pack(f">{{len(a)}}{FIXED_CODES[elem]}", *a)']
        else:
            wide = elem != "string"
            conv = "e.encode()" if elem == "string" else "e"
            lines += ["for e in a:", f"    b = {conv}"]
            lines += ["    " + line for line in self.length("len(b)", compact, wide)]
            lines += ["    out += b"]
        return lines

    def tagged(self) -> list[str]:
        v = self.version
        tagged = sorted((f for f in self.struct.fields if v in f.tagged), key=lambda f: f.tag or 0)
        if not tagged:
            return ["out.append(0)"]
        # Fast path: nothing to tag (the common case) costs a few comparisons. Otherwise each
        # present field is encoded into a buffer of its own, because its size goes first on
        # the wire, by rebinding ``out`` for the duration.
        conds = " or ".join(f"({non_default_expr(f, f'o.{f.attr}', f'v{i}')})"
                            for i, f in enumerate(tagged))
        lines = ["t = []", "out0 = out"]
        for f in tagged:
            lines += [f"x = o.{f.attr}", f"if {non_default_expr(f, 'x')}:",
                      "    out = bytearray()"]
            lines += ["    " + line for line in self.field(f, "x")]
            lines += [f"    t.append(({f.tag}, out))"]
        lines += ["out = out0", "_write_tags(out, t)"]
        return [f"if {conds}:", *("    " + line for line in lines), "else:", "    out.append(0)"]


def non_default_expr(f: FieldSpec, var: str, name: str = "") -> str:
    """Expression true when ``var`` (the value of ``f``) differs from the field's default.

    Struct defaults are compared field by field, inline, instead of building a default
    instance and calling ``__eq__``: tagged structs sit on hot paths (FetchResponse).
    ``name`` binds the struct once (walrus) when ``var`` is an attribute access.
    """
    if f.struct is not None and not f.is_array and f.default != "null":
        head = f"({name} := {var})" if name else var
        ref = name or var
        subs = [non_default_expr(sub, f"{ref}.{sub.attr}") for sub in f.struct.fields]
        inner = " or ".join(f"({c})" for c in subs) or "False"
        return f"{head}.__class__ is not {f.struct.cls_name} or {inner}"
    lit = default_literal(f, lambda c: f"{c.cls_name}()")
    if lit == "None":
        return f"{var} is not None"
    return f"{var} != {lit}"


# -- decoding ------------------------------------------------------------------------------


class Decoder(_VersionBody):
    def body(self) -> list[str]:
        v = self.version
        lines = [f"o = _new({self.struct.cls_name})"]
        for f in self.struct.fields:
            if v not in f.versions or v in f.tagged:
                lit = default_literal(f, lambda s: f"{s.cls_name}()")
                lines.append(f"o.{f.attr} = {lit}")
        run: list[FieldSpec] = []
        for f in self.struct.fields:
            if v not in f.versions or v in f.tagged:
                continue
            if not f.is_array and f.type in FIXED_CODES:
                run.append(f)
                continue
            lines += self.fixed_run(run)
            run = []
            lines += self.field(f, f"o.{f.attr}")
        lines += self.fixed_run(run)
        if self.flexible:
            lines += self.tagged()
        lines.append("return o, pos")
        return lines

    def fixed_run(self, run: list[FieldSpec]) -> list[str]:
        if not run:
            return []
        codes = [FIXED_CODES[f.type] for f in run]
        suffix = self.mod.fmt(codes)
        targets = ", ".join(f"o.{f.attr}" for f in run)
        if len(run) == 1:
            targets += ","
        size = sum(FIXED_SIZES[c] for c in codes)
        return [f"{targets} = _U_{suffix}(buf, pos)", f"pos += {size}"]

    def length(self, compact: bool, wide: bool, var: str = "n") -> list[str]:
        """Read a length into ``var``: -1 means null (compact lengths are shifted by one)."""
        if compact:  # the raw uvarint: 0 is null, else length + 1
            return [f"{var} = buf[pos]", f"if {var} < 128:", "    pos += 1", "else:",
                    f"    {var}, pos = _ruv(buf, pos)"]
        suffix = self.mod.fmt(["i" if wide else "h"])
        return [f"({var},) = _U_{suffix}(buf, pos)", f"pos += {4 if wide else 2}"]

    def null_check(self, f: FieldSpec, target: str, compact: bool,
                   var: str = "n") -> tuple[list[str], bool]:
        """Lines handling a null length; returns (lines, value-branch-needs-else)."""
        name = f.name
        nullable = self.version in f.nullable or f.type == "records"
        if compact:
            if nullable:
                return [f"if not {var}:", f"    {target} = None", "else:"], True
            return [f"if not {var}:", f'    _fail("null value for {name}")'], False
        if nullable:
            return [f"if {var} < 0:",
                    f"    if {var} != -1:",
                    f'        _fail("invalid length for {name}")',
                    f"    {target} = None",
                    "else:"], True
        return [f"if {var} < 0:", f'    _fail("null or negative length for {name}")'], False

    def field(self, f: FieldSpec, target: str) -> list[str]:
        compact = self.compact(f)
        if f.is_array:
            value = self.array(f, compact, target)
            wide = True
        elif f.struct is not None:
            return self.struct_field(f, target)
        elif f.type in ("string", "bytes", "records"):
            conv = "buf[pos:q].decode()" if f.type == "string" else "buf[pos:q]"
            value = [f"q = pos + n{' - 1' if compact else ''}", f"{target} = {conv}", "pos = q"]
            wide = f.type != "string"
        else:  # a fixed-width tagged field
            suffix = self.mod.fmt([FIXED_CODES[f.type]])
            size = FIXED_SIZES[FIXED_CODES[f.type]]
            return [f"({target},) = _U_{suffix}(buf, pos)", f"pos += {size}"]
        lines = self.length(compact, wide)
        checks, indent = self.null_check(f, target, compact)
        lines += checks
        pad = "    " if indent else ""
        return lines + [pad + line for line in value]

    def struct_field(self, f: FieldSpec, target: str) -> list[str]:
        assert f.struct is not None
        fn = self.mod.dec_names[(id(f.struct), self.version)]
        if self.version not in f.nullable:
            return [f"{target}, pos = {fn}(buf, pos)"]
        # Kafka marks a nullable struct with an int8: negative means null.
        return ["if buf[pos] >= 128:", "    pos += 1", f"    {target} = None", "else:",
                f"    {target}, pos = {fn}(buf, pos + 1)"]

    def array(self, f: FieldSpec, compact: bool, target: str) -> list[str]:
        out = ["n -= 1"] if compact else []
        # As Kafka's readers do: a count beyond the bytes left is malformed, not a huge loop.
        out += ["if n > len(buf) - pos:", f'    _fail("too many elements in {f.name}")']
        elem = f.elem
        if f.struct is not None:
            fn = self.mod.dec_names[(id(f.struct), self.version)]
            out += [f"{target} = a = []", "for _ in range(n):", f"    e, pos = {fn}(buf, pos)",
                    "    a.append(e)"]
        elif elem == "uuid":
            out += ["q = pos + 16 * n",
                    f"{target} = [buf[i:i + 16] for i in range(pos, q, 16)]", "pos = q"]
        elif elem in FIXED_CODES:
            code = FIXED_CODES[elem]
            out += [f"q = pos + {FIXED_SIZES[code]} * n",
                    f'{target} = list(_unpack_from(f">{{n}}{code}", buf, pos))', "pos = q"]
        else:
            conv = "buf[pos:r].decode()" if elem == "string" else "buf[pos:r]"
            out += [f"{target} = a = []", "for _ in range(n):"]
            inner = self.length(compact, elem != "string", "m")
            if compact:
                inner += ["if not m:", f'    _fail("null element in {f.name}")',
                          "r = pos + m - 1"]
            else:
                inner += ["if m < 0:", f'    _fail("null element in {f.name}")', "r = pos + m"]
            inner += [f"a.append({conv})", "pos = r"]
            out += ["    " + line for line in inner]
        return out

    def tagged(self) -> list[str]:
        v = self.version
        tagged = sorted((f for f in self.struct.fields if v in f.tagged), key=lambda f: f.tag or 0)
        if not tagged:
            return ["if buf[pos]:", "    pos = _skip_tags(buf, pos)", "else:", "    pos += 1"]
        out = ["nt = buf[pos]", "if nt < 128:", "    pos += 1", "else:",
               "    nt, pos = _ruv(buf, pos)", "for _ in range(nt):",
               "    tag, pos = _ruv(buf, pos)", "    sz, pos = _ruv(buf, pos)",
               "    end = pos + sz"]
        for i, f in enumerate(tagged):
            out.append(f"    {'if' if i == 0 else 'elif'} tag == {f.tag}:")
            out += ["        " + line for line in self.field(f, f"o.{f.attr}")]
        out.append("    pos = end")
        return out
