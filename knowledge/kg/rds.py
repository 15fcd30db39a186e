"""A small reader for R's serialisation format (``.rds`` files), enough for data frames of plain columns.

R writes one object per ``.rds`` file: usually gzip-compressed, in the portable big-endian "XDR" encoding
(format versions 2 and 3). This reader understands the object types a data frame is made of -- character,
integer, logical and double vectors, lists, attribute pairlists, symbols, references, external pointers (as
data.table leaves them) and the compact
"ALTREP" forms that R 3.5+ writes for row names and deferred strings -- and refuses the rest (closures,
environments with code, bytecode) with a clear error. It needs nothing beyond the standard library.

:func:`read_data_frame` returns a data frame as ``{column name: list of values}``; columns not asked for are
walked over without building their values, which keeps large tables quick to read.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# SEXP type codes (R internals, serialize.c)
_NILSXP, _SYMSXP, _LISTSXP, _CLOSXP, _ENVSXP, _PROMSXP, _LANGSXP = 0, 1, 2, 3, 4, 5, 6
_CHARSXP, _LGLSXP, _INTSXP, _REALSXP, _CPLXSXP, _STRSXP = 9, 10, 13, 14, 15, 16
_DOTSXP, _VECSXP, _EXPRSXP, _EXTPTRSXP, _WEAKREFSXP, _RAWSXP, _S4SXP = 17, 19, 20, 22, 23, 24, 25
_ALTREP, _ATTRLIST, _ATTRLANG, _BASEENV, _EMPTYENV = 238, 239, 240, 241, 242
_PERSIST, _PACKAGE, _NAMESPACE, _BASENAMESPACE = 247, 248, 249, 250
_MISSINGARG, _UNBOUND, _GLOBALENV, _NILVALUE, _REF = 251, 252, 253, 254, 255

_IS_OBJECT, _HAS_ATTR, _HAS_TAG = 1 << 8, 1 << 9, 1 << 10
_LATIN1, _UTF8 = 1 << 2, 1 << 3           # CHARSXP encoding bits (in the "levels" part of the flags)
NA_INTEGER = -(2 ** 31)
_INT = struct.Struct(">i").unpack_from
_TWO_INTS = struct.Struct(">ii").unpack_from


class RdsError(ValueError):
    """The file is not an R serialisation this reader understands."""


@dataclass
class Symbol:
    name: str


@dataclass
class Pairlist:
    """An R pairlist (attributes, calls): ``(tag, value)`` items."""
    items: list[tuple[str | None, Any]] = field(default_factory=list)

    def get(self, tag: str, default: Any = None) -> Any:
        for t, v in self.items:
            if t == tag:
                return v
        return default


@dataclass
class RObject:
    """A vector (``value``: a list, or None for a skipped column) and its attributes."""
    type: int
    value: Any
    attributes: Pairlist | None = None

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default) if self.attributes else default


_SPECIAL = {_NILVALUE: None, _EMPTYENV: "<emptyenv>", _BASEENV: "<baseenv>", _GLOBALENV: "<globalenv>",
            _UNBOUND: "<unbound>", _MISSINGARG: "<missing>", _BASENAMESPACE: "<base namespace>"}


def _open_bytes(path: Path) -> bytes:
    """The uncompressed bytes of an ``.rds`` file (gzip, bzip2, xz or none)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw)
    if raw[:3] == b"BZh":
        return bz2.decompress(raw)
    if raw[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(raw)
    return raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.buf = data
        self.pos = 0
        self.refs: list[Any] = []
        self.skip_depth = 0          # > 0 while walking over a column whose values are not wanted

    # -- primitives
    def int(self) -> int:
        (v,) = _INT(self.buf, self.pos)
        self.pos += 4
        return v

    def length(self) -> int:
        n = self.int()
        if n == -1:                  # long vector: two more ints
            hi, lo = struct.unpack_from(">II", self.buf, self.pos)
            self.pos += 8
            n = (hi << 32) | lo
        return n

    def header(self) -> None:
        fmt = self.buf[:2]
        if fmt != b"X\n":
            raise RdsError("only the portable XDR serialisation is supported (saveRDS(ascii=FALSE))")
        self.pos = 2
        version = self.int()
        self.int()                   # the R version that wrote the file
        self.int()                   # the minimal R version that can read it
        if version == 3:
            n = self.int()
            self.pos += n            # native encoding name
        elif version != 2:
            raise RdsError(f"unsupported serialisation format version {version}")

    # -- strings
    def charsxp_body(self, flags: int) -> str | None:
        n = self.int()
        if n == -1:
            return None
        start = self.pos
        self.pos += n
        raw = self.buf[start:self.pos]
        enc = "latin-1" if (flags >> 12) & _LATIN1 and not (flags >> 12) & _UTF8 else "utf-8"
        return raw.decode(enc, errors="replace")

    def strsxp(self, n: int) -> list[str | None] | None:
        """A character vector's elements; walked over without decoding while skipping."""
        buf, pos = self.buf, self.pos
        if self.skip_depth:
            for _ in range(n):
                ln = _INT(buf, pos + 4)[0]
                pos += 8 + max(0, ln)
            self.pos = pos
            return None
        out: list[str | None] = [None] * n
        for i in range(n):
            flags, ln = _TWO_INTS(buf, pos)
            pos += 8
            if ln < 0:
                continue
            raw = buf[pos:pos + ln]
            pos += ln
            if (flags >> 12) & _LATIN1 and not (flags >> 12) & _UTF8:
                out[i] = raw.decode("latin-1")
            else:
                out[i] = raw.decode("utf-8", errors="replace")
        self.pos = pos
        return out

    # -- items
    def item(self) -> Any:
        flags = self.int()
        t = flags & 0xFF
        if t in _SPECIAL:
            return _SPECIAL[t]
        if t == _REF:
            idx = flags >> 8
            if idx == 0:
                idx = self.int()
            return self.refs[idx - 1]
        if t == _SYMSXP:
            sym = Symbol(self.item() or "")
            self.refs.append(sym)
            return sym
        if t in (_PACKAGE, _NAMESPACE, _PERSIST):
            if self.int() != 0:
                raise RdsError("malformed persistent string vector")
            names = [self.item() for _ in range(self.int())]
            label = f"<{'namespace' if t == _NAMESPACE else 'package'} {' '.join(str(x) for x in names)}>"
            self.refs.append(label)
            return label
        if t == _ENVSXP:
            env: dict[str, Any] = {}
            self.refs.append(env)
            self.int()               # locked
            enclos, frame, hashtab, attrs = self.item(), self.item(), self.item(), self.item()
            env.update(enclos=enclos, frame=frame, hashtab=hashtab, attributes=attrs)
            return env
        if t in (_EXTPTRSXP, _WEAKREFSXP):
            # a pointer into the writer's memory (e.g. data.table's self-reference): no data of its own
            ptr = RObject(t, None)
            self.refs.append(ptr)
            if t == _EXTPTRSXP:
                self.item()          # protected value
                self.item()          # tag
            if flags & _HAS_ATTR:
                self.item()
            return ptr
        if t in (_LISTSXP, _LANGSXP, _CLOSXP, _PROMSXP, _DOTSXP, _ATTRLIST, _ATTRLANG):
            return self.pairlist(flags)
        if t == _CHARSXP:
            return self.charsxp_body(flags)
        if t == _ALTREP:
            return self.altrep()
        if t == _S4SXP:
            return RObject(t, None, self.item() if flags & _HAS_ATTR else None)
        value = self.vector(t)
        attrs = self.item() if flags & _HAS_ATTR else None
        return RObject(t, value, attrs if isinstance(attrs, Pairlist) else None)

    def pairlist(self, flags: int) -> Pairlist:
        """A pairlist, read iteratively along its CDR chain (attribute lists can be long)."""
        out = Pairlist()
        while True:
            if flags & _HAS_ATTR:
                self.item()
            tag = self.item() if flags & _HAS_TAG else None
            out.items.append((tag.name if isinstance(tag, Symbol) else tag, self.item()))
            flags = self.int()
            t = flags & 0xFF
            if t == _NILVALUE:
                return out
            if t not in (_LISTSXP, _LANGSXP, _ATTRLIST, _ATTRLANG):
                self.pos -= 4        # an unusual CDR: read it as an item of its own
                out.items.append((None, self.item()))
                return out

    def vector(self, t: int) -> Any:
        n = self.length()
        if t == _STRSXP:
            return self.strsxp(n)
        if t in (_LGLSXP, _INTSXP):
            start = self.pos
            self.pos += 4 * n
            return None if self.skip_depth else list(struct.unpack_from(f">{n}i", self.buf, start))
        if t == _REALSXP:
            start = self.pos
            self.pos += 8 * n
            return None if self.skip_depth else list(struct.unpack_from(f">{n}d", self.buf, start))
        if t == _CPLXSXP:
            start = self.pos
            self.pos += 16 * n
            if self.skip_depth:
                return None
            vals = struct.unpack_from(f">{2 * n}d", self.buf, start)
            return [complex(vals[i], vals[i + 1]) for i in range(0, 2 * n, 2)]
        if t == _RAWSXP:
            start = self.pos
            self.pos += n
            return None if self.skip_depth else self.buf[start:self.pos]
        if t in (_VECSXP, _EXPRSXP):
            return [self.item() for _ in range(n)]
        raise RdsError(f"unsupported R object type {t}")

    def altrep(self) -> Any:
        """Compact ALTREP objects: expand the common ones to ordinary vectors."""
        info = self.item()
        state = self.item()
        attrs = self.item()
        kind = info.items[0][1].name if isinstance(info, Pairlist) and isinstance(info.items[0][1], Symbol) else ""
        attrs = attrs if isinstance(attrs, Pairlist) else None
        if self.skip_depth:          # walking over a column: its values are not wanted
            typ = info.items[2][1] if isinstance(info, Pairlist) and len(info.items) > 2 else None
            return RObject(typ.value[0] if isinstance(typ, RObject) and typ.value else _INTSXP, None, attrs)
        if kind in ("compact_intseq", "compact_realseq"):
            n, start, step = state.value[:3]
            vals = [start + i * step for i in range(int(n))]
            typ = _INTSXP if kind == "compact_intseq" else _REALSXP
            return RObject(typ, [int(v) for v in vals] if typ == _INTSXP else vals, attrs)
        if kind == "deferred_string":
            # state: (original vector, ...); its values rendered as strings
            src = state.items[0][1] if isinstance(state, Pairlist) else state
            vals = src.value if isinstance(src, RObject) else None
            strs = None if vals is None else [None if v is None or v == NA_INTEGER else _num_str(v) for v in vals]
            return RObject(_STRSXP, strs, attrs)
        if kind.startswith("wrap_"):
            inner = state.value[0] if isinstance(state, RObject) else state
            return RObject(inner.type, inner.value, attrs or inner.attributes)
        raise RdsError(f"unsupported compact R object {kind!r}")


def _num_str(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def read_rds(path: Path | str) -> Any:
    """The object in an ``.rds`` file (vectors as :class:`RObject`, pairlists as :class:`Pairlist`)."""
    r = _Reader(_open_bytes(Path(path)))
    r.header()
    return r.item()


def read_data_frame(path: Path | str, columns: Iterable[str] | None = None) -> dict[str, list]:
    """An R data frame (or tibble) saved with ``saveRDS``: ``{column: values}``, missing values as None.

    ``columns``: only these columns (an unknown name is an error). R stores the column names after the data,
    so a first pass walks the file without decoding anything, noting where each column starts; the second
    decodes only the wanted columns."""
    data = _open_bytes(Path(path))
    r = _Reader(data)
    r.header()
    flags = r.int()
    if flags & 0xFF != _VECSXP or not flags & _HAS_ATTR:
        raise RdsError(f"{Path(path).name} holds no data frame (a list with attributes)")
    n = r.length()
    starts = []
    r.skip_depth += 1
    for _ in range(n):
        starts.append(r.pos)
        r.item()
    r.skip_depth -= 1
    attrs = r.item()
    names_obj = attrs.get("names") if isinstance(attrs, Pairlist) else None
    if not isinstance(names_obj, RObject) or names_obj.value is None or len(names_obj.value) != n:
        raise RdsError(f"{Path(path).name}: the data frame has no column names")
    names = [str(x) for x in names_obj.value]
    wanted = list(names) if columns is None else list(columns)
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise RdsError(f"no column(s) {unknown} in {Path(path).name}; it has {names}")
    out: dict[str, list] = {}
    for name in wanted:
        # the references a column may use were all recorded by the first pass, in file order
        r.pos = starts[names.index(name)]
        out[name] = _column_values(r.item())
    return out


def _column_values(col: Any) -> list:
    """Plain Python values of a data-frame column: NA as None, logicals as bool, factors as their labels."""
    if not isinstance(col, RObject) or not isinstance(col.value, list):
        raise RdsError("a data-frame column is not an atomic vector")
    values = col.value
    if col.type in (_INTSXP, _LGLSXP):
        values = [None if v == NA_INTEGER else v for v in values]
        if col.type == _LGLSXP:
            values = [None if v is None else bool(v) for v in values]
    levels = col.attr("levels")
    if isinstance(levels, RObject) and isinstance(levels.value, list):
        lv = levels.value
        values = [None if v is None else lv[v - 1] for v in values]
    return values
