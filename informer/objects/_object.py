"""``KubeObject``: one Kubernetes object as a read-only mapping over its raw JSON."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from informer.objects._decoded import full, member, members
from informer.objects._forms import (
    BUSY,
    ITEM,
    LINE,
    OBJECT,
    PACKED,
    Codec,
    _Form,
    _Packed,
    form_of,
    packed_form,
)
from informer.objects._forms import _plain as _form_table
from informer.objects._frozen import _FrozenDict, _FrozenList, freeze
from informer.objects._uid import uid_text, uid_value
from informer.objects._wire import (
    _NO_LAZY,
    _NO_META,
    _NO_PACK_META,
    _NO_RV_META,
    ObjectMeta,
    _any_decoder,
    _dict_decoder,
    _dict_event_decoder,
    _encoder,
    _event_decoder,
    _event_heads,
    _Head,
    _head_decoder,
    _lazy_decoder,
    _lazy_event_decoder,
    _LazyMeta,
    _pack_event_decoder,
    _pack_head_decoder,
    _PackedMeta,
    _raw_event_decoder,
    _rv_decoder,
    _rv_event_decoder,
)
from informer.shards import ShardField, hash_value
from informer.transforms import DropFields

Trim = DropFields
"""A byte-level transform of each object's JSON (it keeps kind, apiVersion and the head)."""

Known = Callable[[str, str], "KubeObject | None"]
"""``known(key, resource_version)``: the cached object with that key and RV, else None. (It
may answer a list's item that does not hold its RV without reading it: the item's bytes are
compared with the listed ones first, ``KubeObject._at_version``.)"""

_OBJECT_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))
# what an ADDED or MODIFIED line of the apiserver's starts with (``_from_event_line_to_pack``)
_PACK_PREFIXES = {t: b'{"type":"%s","object":' % t.encode() for t in ("ADDED", "MODIFIED")}
_NO_LABELS: dict[str, str] = {}  # read-only (``labels`` is a proxy): shared by unlabelled objects
_RV_MEMBER = b'"resourceVersion":"'
_HEAD_FIRST = 1024  # bytes from which an object's RV is read from its head first (``_read_rv``)


if TYPE_CHECKING:

    class _Base(Mapping[str, Any]):
        """What type checkers see: a read-only mapping (at run time: an untracked struct)."""

        def __init__(self, *fields: Any) -> None: ...
        def __init_subclass__(cls, **options: Any) -> None: ...

else:
    _Base = msgspec.Struct


class KubeObject(_Base, gc=False, eq=False):
    """One Kubernetes object: raw JSON plus its key, the rest decoded on access.

    Build one with :meth:`from_raw`, :meth:`from_list_item` or :meth:`from_dict`; the
    representation behind the mapping is private and may change. (It is a ``msgspec.Struct``
    that the garbage collector does not track: a cache of 100,000 objects adds nothing to every
    collection's work, and each object is 16 bytes smaller. It cannot be part of a reference
    cycle: it holds only bytes, strings, a struct of strings and its form. Its kind, apiVersion
    and namespace are its form's, one interned ``_Form`` shared by all the objects that have
    them in common. 4 fields, 48 bytes.)

    ``_lazy`` is what the object holds beside its bytes: None (a list's item: nothing, its RV
    is read from the bytes when asked; a list's items are most of a cache, and their RV strings
    took 64 of the 780 bytes a 464-byte ConfigMap cost), the RV string (an object of a watch or
    a write: read per event, so held), or the decoded metadata (``_LazyMeta``, or
    ``_PackedMeta`` for a compressed object), which holds the RV from then on.
    """

    _raw: bytes
    _form: _Form
    _key: str
    _lazy: _LazyMeta | _PackedMeta | str | None = None

    @classmethod
    def _make(
        cls, raw: bytes, code: int, head: _Head, kind: str, api_version: str, item: bool = False
    ) -> KubeObject:
        """The object of ``raw`` (``item``: a list's, which does not hold its RV)."""
        m = head.metadata or _NO_META
        ns, name = m.namespace, m.name
        return cls(
            raw,
            form_of(code, kind, api_version, ns),
            f"{ns}/{name}" if ns else name,
            None if item else m.resource_version,
        )

    @classmethod
    def _from_fields(
        cls, raw: bytes, code: int, name: str, ns: str, rv: str, kind: str, api_version: str
    ) -> KubeObject:
        """The object with its key built and its form (kind, apiVersion, namespace) interned
        (a first list inlines the same in its loop)."""
        return cls(raw, form_of(code, kind, api_version, ns), f"{ns}/{name}" if ns else name, rv)

    @classmethod
    def from_raw(cls, raw: bytes) -> KubeObject:
        """Decode the envelope and metadata of one JSON object (raises ``msgspec.DecodeError``)."""
        head = _head_decoder.decode(raw)
        return cls._make(bytes(raw), OBJECT, head, head.kind or "", head.api_version or "")

    @classmethod
    def from_list_item(
        cls,
        raw: bytes,
        kind: str,
        api_version: str,
        *,
        known: Known | None = None,
        trim: Trim | None = None,
    ) -> KubeObject:
        """Like ``from_raw`` for a list item; ``kind``/``apiVersion`` fill in those it lacks.

        ``known(key, resource_version)``: an already cached object of that key and RV, returned
        instead of a new one (a relist then drops the item's bytes at once). ``trim``: a
        byte-level transform of the item (``informer.transforms.DropFields``).
        """
        if trim is not None:
            return cls._from_trimmed_items((raw,), kind, api_version, known, trim)[0]
        head = _head_decoder.decode(raw)
        if known is not None:
            m = head.metadata or _NO_META
            key = f"{m.namespace}/{m.name}" if m.namespace else m.name
            rv = m.resource_version
            cached = known(key, rv)
            if cached is not None and cached._at_version(rv, raw):
                return cached
        k, a = head.kind, head.api_version
        if k and a:
            return cls._make(bytes(raw), OBJECT, head, k, a, True)
        return cls._make(bytes(raw), ITEM, head, k or kind, a or api_version, True)

    @classmethod
    def _from_list_items(
        cls,
        raws: Sequence[Any],
        kind: str,
        api_version: str,
        known: Known | None = None,
        trim: Trim | None = None,
    ) -> list[KubeObject]:
        """``from_list_item`` for each item of a page; without ``known`` and ``trim`` (a first
        list) in one loop that builds each object directly (100,000 of them per sync)."""
        if trim is not None:
            return cls._from_trimmed_items(raws, kind, api_version, known, trim)
        if known is not None:
            item = cls.from_list_item
            return [item(raw, kind, api_version, known=known, trim=trim) for raw in raws]
        # (the RV decoded too, not held: the decode checks it is a string, as it always did,
        # for ~200 instructions an item)
        decode = _head_decoder.decode
        items: dict[str, _Form] = {}  # namespace -> the form of items lacking kind and apiVersion
        out: list[KubeObject] = []
        append = out.append
        for raw in raws:
            head = decode(raw)
            m = head.metadata or _NO_META
            ns = m.namespace
            k, a = head.kind, head.api_version
            if not (k or a):  # what list items are
                form = items.get(ns)
                if form is None:
                    form = items[ns] = form_of(ITEM, kind, api_version, ns)
            elif k and a:
                form = form_of(OBJECT, k, a, ns)
            else:
                form = form_of(ITEM, k or kind, a or api_version, ns)
            append(cls(bytes(raw), form, f"{ns}/{m.name}" if ns else m.name))
        return out

    @classmethod
    def _to_pack_items(
        cls,
        raws: Sequence[Any],
        kind: str,
        api_version: str,
        known: Known | None,
        trim: Trim | None,
        shared: dict[tuple[tuple[str, str], ...], dict[str, str]],
    ) -> list[KubeObject]:
        """``_from_list_items`` for a store that packs its objects (``PagePacking``): each new
        item keeps its slice of the page, not a copy (the packer compresses it and packs the
        object in place before the page is gone), with its uid and labels decoded in the same
        pass (equal label sets share ``shared``'s dict). Known items are the cached ones."""
        decode = _pack_head_decoder.decode
        lazy_decode = _lazy_decoder.decode
        cut = None if trim is None else trim.apply_with_head
        items: dict[str, _Form] = {}  # namespace -> the form of items lacking kind and apiVersion
        out: list[KubeObject] = []
        append = out.append
        for raw in raws:
            if cut is None:
                head = decode(raw)
                m = head.metadata or _NO_PACK_META
                data, k, a = raw, head.kind, head.api_version
                name, ns, rv = m.name, m.namespace, m.resource_version
            else:
                data, k, a, name, ns, rv = cut(raw)
            key = f"{ns}/{name}" if ns else name
            if (
                known is not None
                and (cached := known(key, rv)) is not None
                and cached._at_version(rv, data)
            ):
                append(cached)
                continue
            lm = m if cut is None else (lazy_decode(data).metadata or _NO_LAZY)
            labels = lm.labels
            if labels:
                labels = shared.setdefault(tuple(labels.items()), labels)
            else:
                labels = _NO_LABELS
            if not (k or a):  # what list items are
                form = items.get(ns)
                if form is None:
                    form = items[ns] = form_of(ITEM, kind, api_version, ns)
            elif k and a:
                form = form_of(OBJECT, k, a, ns)
            else:
                form = form_of(ITEM, k or kind, a or api_version, ns)
            append(cls(data, form, key, _LazyMeta(lm.uid, labels, lm.deletion_timestamp, rv)))
        return out

    @classmethod
    def _from_trimmed_items(
        cls, raws: Sequence[Any], kind: str, api_version: str, known: Known | None, trim: Trim
    ) -> list[KubeObject]:
        """``from_list_item`` with a byte-level transform for each item of a page: the
        transform reads the head in the same pass (``DropFields.apply_with_head``). The items
        do not hold their RV (the cut keeps the head: it is read from the bytes when asked)."""
        cut = trim.apply_with_head
        out: list[KubeObject] = []
        append = out.append
        for raw in raws:
            data, k, a, name, ns, rv = cut(raw)
            key = f"{ns}/{name}" if ns else name
            if (
                known is not None
                and (cached := known(key, rv)) is not None
                and cached._at_version(rv, data)
            ):
                append(cached)
            elif k and a:
                append(cls(data, form_of(OBJECT, k, a, ns), key))
            else:
                append(cls(data, form_of(ITEM, k or kind, a or api_version, ns), key))
        return out

    @classmethod
    def from_event_line(cls, line: bytes) -> tuple[str, KubeObject]:
        """A watch line's type and object, in one decode; the object keeps the line's bytes.

        Raises ``msgspec.DecodeError`` (``ValidationError`` when the envelope or the object's
        head has the wrong shape).
        """
        event = _event_decoder.decode(line)
        head = event.object
        m = head.metadata or _NO_META
        ns = m.namespace
        # inlined (every watch event): the interned form's lookup, then the object
        t = (LINE, head.kind or "", head.api_version or "", ns)
        form = _form_table.get(t) or form_of(*t)
        key = f"{ns}/{m.name}" if ns else m.name
        return event.type, cls(bytes(line), form, key, m.resource_version)

    @classmethod
    def _from_event_line_to_pack(cls, line: bytes | memoryview) -> tuple[str, KubeObject] | None:
        """``from_event_line`` for a store that packs its objects: an ADDED or MODIFIED object
        holds its own copy of its member of the line (``line`` may be a view of the network
        read: one copy, as ``from_event_line`` makes of the line), its uid and labels decoded
        in the same pass. None when the line is not of the apiserver's shape,
        ``{"type":"T","object":{...}}``, with no other member and ``object`` once (counted as
        decoded: ``_PackEventHead``; a scan of the line for ``"object":`` cost 3.7 us of an
        8 KB Pod and missed ``"object" :``); then ``from_event_line`` decodes it.
        """
        before = next(_event_heads)
        try:
            event = _pack_event_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if next(_event_heads) != before + 2:  # "object" twice at the top (or another thread's)
            return None
        type_ = event.type
        prefix = _PACK_PREFIXES.get(type_)  # {"type":"T","object":
        if prefix is None:
            return None
        start = len(prefix)
        end = len(line)
        while end and line[end - 1] in b" \t\r\n":
            end -= 1
        if line[:start] != prefix or line[end - 2 : end] != b"}}":
            return None
        head = event.object
        m = head.metadata or _NO_PACK_META
        lazy = _LazyMeta(m.uid, m.labels or _NO_LABELS, m.deletion_timestamp, m.resource_version)
        name, ns = m.name, m.namespace
        form = form_of(OBJECT, head.kind or "", head.api_version or "", ns)
        data = bytes(line[start : end - 1])
        return type_, cls(data, form, f"{ns}/{name}" if ns else name, lazy)

    @classmethod
    def from_trimmed_event_line(cls, line: bytes, trim: Trim) -> tuple[str, KubeObject]:
        """``from_event_line`` then ``_trimmed(trim)``, in one decode of the line when the
        byte-level cut applies (else in the two steps, which raise what ``from_event_line``
        raises)."""
        fast = trim.event_with_head(line)
        if fast is not None:
            type_, (data, k, a, name, ns, rv) = fast
            if rv and type_ in _OBJECT_EVENTS:  # else the two steps classify the line
                return type_, cls._from_fields(data, LINE, name, ns, rv, k or "", a or "")
        type_, obj = cls.from_event_line(line)
        return type_, obj._trimmed(trim) if type_ in _OBJECT_EVENTS else obj

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> KubeObject:
        """Encode a plain object (e.g. a write's response) into a ``KubeObject``."""
        if isinstance(obj, KubeObject):
            return obj
        return cls.from_raw(_encoder.encode(_plain(obj)))

    def _trimmed(self, trim: Trim) -> KubeObject:
        """This object with its JSON passed through ``trim`` (which keeps the head); a watch
        line stays a line, cut where its object's fields were, unless only the object can be."""
        raw, form = self._state()
        if form.code == PACKED:  # never the case on the reflector's path; kept exact all the same
            plain, form = self._plain()
            return KubeObject(trim.apply(plain), form, self._key, self._lazy)
        if form.code == LINE:
            line = trim.apply_to_line(raw)
            if line is not None:
                raw = line
            else:
                raw = trim.apply(_raw_event_decoder.decode(raw).object)
                # a watch object is complete as it came
                form = form_of(OBJECT, form.kind, form.api_version, form.namespace)
        else:
            raw = trim.apply(raw)
        return KubeObject(raw, form, self._key, self._lazy)

    # -- pickling (the slots, with the lazy parts left out) ------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        raw, form = self._plain()  # a compressed object pickles as its JSON
        return (_restore, (raw, form.code, self.kind, self.api_version))

    # -- metadata without decoding -------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self._form.kind

    @property
    def api_version(self) -> str:
        return self._form.api_version

    @property
    def name(self) -> str:
        ns = self._form.namespace
        return self._key[len(ns) + 1 :] if ns else self._key

    @property
    def namespace(self) -> str:
        return self._form.namespace

    @property
    def resource_version(self) -> str:
        lazy = self._lazy
        if type(lazy) is str:
            return lazy
        if lazy is None:  # a list's item: read from its bytes
            return self._read_rv()
        return lazy.resource_version  # type: ignore[union-attr]

    def _read_rv(self) -> str:
        """The RV of an object that does not hold it, decoded from its bytes.

        A large object's head alone when it can be: its JSON up to the first
        ``"resourceVersion":"…"``, closed as an object in an object, is decoded; when that is
        the top-level ``metadata``'s member (as the apiserver writes objects: kind, apiVersion,
        then metadata with name, namespace, uid, resourceVersion first), the head answers (an
        8 KB Pod: about 7k instructions, where decoding it whole skipping the rest took 73k).
        Else (the pattern nested deeper or under another member, escapes, spaces), the whole.
        """
        raw, form = self._state()
        code = form.code
        if code == PACKED:  # packed meanwhile (another thread): its metadata was held first
            return self._meta().resource_version
        if code == LINE:
            return (_rv_event_decoder.decode(raw).object.metadata or _NO_RV_META).resource_version
        if len(raw) > _HEAD_FIRST:
            i = raw.find(_RV_MEMBER)
            if i >= 0:
                j = raw.find(b'"', i + len(_RV_MEMBER))
                try:
                    head = _rv_decoder.decode(raw[: j + 1] + b"}}").metadata
                except msgspec.DecodeError:  # (also a ValidationError): the whole decode says
                    head = None
                if head is not None:
                    return head.resource_version
        return (_rv_decoder.decode(raw).metadata or _NO_RV_META).resource_version

    def _at_version(self, rv: str, raw: Any = None) -> bool:
        """Whether this object is at RV ``rv``; ``raw``: the JSON (bytes or a buffer) of a listed
        item at ``rv``, of the same form. A list's item, which does not hold its RV, with the
        same bytes is at ``rv`` without reading it (a relist of unchanged objects: a copy and a
        comparison, ~1.5k instructions for a ConfigMap where reading the RV took 6k)."""
        lazy = self._lazy
        if lazy is None:
            if raw is not None:
                own, form = self._state()
                if form.code <= ITEM and own == (raw if type(raw) is bytes else bytes(raw)):
                    return True
            return self._read_rv() == rv
        if isinstance(lazy, str):
            return lazy == rv
        return lazy.resource_version == rv

    def _held_rv(self) -> str | None:
        """The RV when the object holds it (a string or its decoded metadata), else None: a
        list's item, whose RV is not above its list's (the writers' verdict relies on that,
        ``informer.store._verdict``)."""
        lazy = self._lazy
        if lazy is None or type(lazy) is str:
            return lazy
        return lazy.resource_version  # type: ignore[union-attr]

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for cluster-scoped objects."""
        return self._key

    def _meta(self) -> _LazyMeta | _PackedMeta:
        lazy = self._lazy
        if lazy is None or isinstance(lazy, str):
            raw, form = self._state()
            code = form.code
            if code == LINE:
                head = _lazy_event_decoder.decode(raw).object
            elif code == PACKED:  # packed: decoded before packing; kept unless a test cleared it
                head = _lazy_decoder.decode(self._plain()[0])
            else:
                head = _lazy_decoder.decode(raw)
            lazy = self._lazy = head.metadata or _NO_LAZY
        return lazy

    # -- compression (``informer.store``'s packer) -------------------------------------------
    @property
    def compressed(self) -> bool:
        """Whether the cache holds this object's JSON compressed (``Compression``)."""
        return self._state()[1].code == PACKED

    def _state(self) -> tuple[bytes, _Form]:
        """``_raw`` and ``_form`` as one consistent pair.

        The packer changes both in place on the event loop's thread (``_pack_in_place``); a
        reader on another thread could read one before and the other after. The writer marks
        the object BUSY in between (a form with the same kind, apiVersion and namespace), and
        forms only move forward (plain, then packed by one codec, then by a newer one), so the
        same form read before and after the bytes, not BUSY, proves the bytes are that form's.
        """
        form = self._form
        raw = self._raw
        if self._form is form and form.code != BUSY:
            return raw, form
        while True:  # (another thread only: the loop never reads in the middle of a write)
            time.sleep(0)  # let the writer finish
            form = self._form
            raw = self._raw
            if self._form is form and form.code != BUSY:
                return raw, form

    def _plain(self) -> tuple[bytes, _Form]:
        """The object's uncompressed bytes and their form (never ``LINE`` when packed)."""
        raw, form = self._state()
        if form.code == PACKED:
            packed: _Packed = form  # type: ignore[assignment]
            return packed.codec.decompress(raw), packed.inner
        return raw, form

    def _object_bytes(self) -> tuple[bytes, bool]:
        """The bytes a codec compresses: the object's JSON (a watch line's object member, as a
        slice of the line: no copy) and whether it is complete (else a list item lacking kind
        and/or apiVersion)."""
        raw, form = self._plain()
        if form.code == LINE:
            return _raw_event_decoder.decode(raw).object, True
        return raw, form.code == OBJECT

    def _pack_in_place(
        self,
        data: bytes,
        codec: Codec,
        lazy: _LazyMeta | _PackedMeta,
        forms: tuple[_Form, _Packed] | None = None,
    ) -> None:
        """Hold ``data`` (``_object_bytes()`` compressed by ``codec``) with ``lazy`` (its uid
        and labels, decoded before: the hot paths never decompress). ``forms``: what
        ``_pack_forms(self._form, codec)`` gives (a batch computes it once per form).

        In place, not a new instance: handlers, the memo of decodes and indexes keep the same
        object (equal before and after: the same JSON), and the key, RV and struct stay where
        they are (replacing them left the old small objects' holes in the heap). Only on the
        event loop's thread; readers elsewhere see the old pair or the new one (``_state``).
        """
        busy, packed = forms or KubeObject._pack_forms(self._form, codec)
        if not isinstance(lazy, _PackedMeta):  # the uid of a UUID as its 128-bit int
            lazy = _PackedMeta(
                uid_value(lazy.uid), lazy.labels, lazy.deletion_timestamp, lazy.resource_version
            )
        self._lazy = lazy
        self._form = busy
        self._raw = data
        self._form = packed

    @staticmethod
    def _pack_forms(form: _Form, codec: Codec) -> tuple[_Form, _Packed]:
        """The forms an object of ``form`` goes through when ``codec`` packs it in place: BUSY,
        then packed (of the plain form: a watch line's object member is a complete object)."""
        inner = form
        if inner.code == PACKED:
            inner = inner.inner  # type: ignore[attr-defined]
        elif inner.code == LINE:
            inner = form_of(OBJECT, inner.kind, inner.api_version, inner.namespace)
        busy = form_of(BUSY, inner.kind, inner.api_version, inner.namespace)
        return busy, packed_form(inner, codec)

    def _settle(self) -> None:
        """An object that kept its slice of a page or line (``_to_pack_items``,
        ``_from_event_line_to_pack``) and is not packed now: its own bytes, so the page can go."""
        raw = self._raw
        if type(raw) is not bytes:
            form = self._form
            self._form = form_of(BUSY, form.kind, form.api_version, form.namespace)
            self._raw = bytes(raw)
            self._form = form

    def _packed_by(self, codec: Codec) -> bool:
        """Whether ``codec`` packed this object."""
        form = self._form
        return form.code == PACKED and form.codec is codec  # type: ignore[attr-defined]

    def _json_size(self) -> int:
        """The length of the JSON this object stands for (uncompressed; a line's envelope
        counted: about 30 bytes)."""
        raw, form = self._state()
        if form.code == PACKED:
            packed: _Packed = form  # type: ignore[assignment]
            size: int = packed.codec.content_size(raw)  # type: ignore[attr-defined]
            return size
        return len(raw)

    @property
    def uid(self) -> str:
        uid = self._meta().uid
        return uid if type(uid) is str else uid_text(uid)  # a compressed object's: an int

    def shard_hash(self, field: ShardField) -> int:
        """The hash a shard selector (KEP-5866) files this object under: FNV-1a 64 of its uid or
        its namespace ("" when cluster-scoped)."""
        return hash_value(self.uid if field is ShardField.UID else self.namespace)

    @property
    def labels(self) -> Mapping[str, str]:
        """Decoded on first access (raises ``msgspec.ValidationError`` if not string pairs)."""
        return MappingProxyType(self._meta().labels)

    @property
    def metadata_(self) -> ObjectMeta:
        """The metadata fields above, as one struct."""
        lazy = self._meta()
        return ObjectMeta(
            self.name,
            self._form.namespace,
            uid_text(lazy.uid),
            lazy.resource_version,
            lazy.labels,
            lazy.deletion_timestamp,
        )

    @property
    def raw(self) -> bytes:
        """The object's JSON (with ``kind`` and ``apiVersion``)."""
        raw, form = self._plain()
        if form.code == OBJECT:
            return raw
        if form.code == LINE:
            return bytes(_raw_event_decoder.decode(raw).object)
        return _encoder.encode(self._decode())

    # -- the full object ---------------------------------------------------------------------
    def _decode(self) -> dict[str, Any]:
        """A fresh full decode (no memo)."""
        raw, form = self._plain()
        if form.code == OBJECT:
            d: dict[str, Any] = _dict_decoder.decode(raw)
            return d
        if form.code == LINE:
            return _dict_event_decoder.decode(raw).object
        d = _dict_decoder.decode(raw)
        kind, api_version = d.get("kind") or form.kind, d.get("apiVersion") or form.api_version
        out: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
        out.update(d)
        out["kind"] = kind
        out["apiVersion"] = api_version
        return out

    def _full(self) -> dict[str, Any]:
        return full(self)

    # Each member is decoded when read, once while the object is among the recently read
    # (``informer.objects._decoded``); iteration, ``len`` and ``in`` read the keys only.
    def __getitem__(self, key: str) -> Any:
        return freeze(member(self, key))

    def __iter__(self) -> Iterator[str]:
        return iter(members(self))

    def __len__(self) -> int:
        return len(members(self))

    def __contains__(self, key: object) -> bool:
        return key in members(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KubeObject):
            raw, form = self._state()
            other_raw, other_form = other._state()
            if form is other_form and raw == other_raw:
                return True  # one form: the same kind and apiVersion
            return bool(self._full() == other._full())
        if isinstance(other, Mapping):
            return bool(self._full() == _plain(other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """A fresh, mutable deep copy of the object."""
        return self._decode()

    def __repr__(self) -> str:
        return f"KubeObject({self.kind or '?'} {self.key} rv={self.resource_version})"

    def __rich_repr__(self) -> Iterator[str]:
        """What rich shows (not the struct's fields: never the object's data in a log)."""
        yield f"{self.kind or '?'} {self.key} rv={self.resource_version}"


if not TYPE_CHECKING:  # the mapping methods a Mapping subclass inherits
    for _name in ("get", "keys", "items", "values"):
        setattr(KubeObject, _name, getattr(Mapping, _name))
    Mapping.register(KubeObject)


def _restore(raw: bytes, code: int, kind: str, api_version: str) -> KubeObject:
    if code == LINE:
        return KubeObject.from_event_line(raw)[1]
    if code not in (OBJECT, ITEM):
        raise ValueError(f"not a KubeObject's form: {code!r}")
    head = _head_decoder.decode(raw)
    return KubeObject._make(raw, code, head, kind, api_version)


def _plain(value: Any) -> Any:
    if isinstance(value, KubeObject):
        return value.to_dict()
    if isinstance(value, _FrozenDict):
        return _plain(value._d)
    if isinstance(value, _FrozenList):
        return [_plain(v) for v in value._l]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if type(value) is msgspec.Raw:  # a member of a view not read yet
        return _any_decoder.decode(value)
    return value
