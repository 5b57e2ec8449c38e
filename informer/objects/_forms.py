"""What ``KubeObject._raw`` holds: a plain form (object, list item, watch line) or a packed one."""

from __future__ import annotations

from typing import Protocol


class _Form:
    """What ``KubeObject._raw`` holds. Three singletons, compared by identity; not an int, so
    that encoding a ``KubeObject`` with msgspec as a struct fails loudly instead of writing its
    private fields (it is a mapping: encode ``obj.raw`` or ``obj.to_dict()``)."""

    __slots__ = ("code",)

    def __init__(self, code: int) -> None:
        self.code = code


_OBJECT = _Form(0)  # the object's JSON, kind and apiVersion as they are
_ITEM = _Form(1)  # a list item's JSON lacking kind and/or apiVersion: the full decode adds them
_LINE = _Form(2)  # a watch event line; the object is its "object" member
_FORMS = (_OBJECT, _ITEM, _LINE)


class Codec(Protocol):
    """A compressor of one informer's objects (``informer.store``'s zstd dictionary codec)."""

    def compress(self, data: bytes) -> bytes: ...
    def decompress(self, data: bytes) -> bytes: ...


class _Packed(_Form):
    """The form of a compressed object: ``_raw`` is ``inner``'s bytes (``_OBJECT`` or
    ``_ITEM``) compressed by ``codec``. Two per codec, shared by every object it packed; an
    object stays readable with the codec that packed it after a retraining made another."""

    __slots__ = ("codec", "inner")

    def __init__(self, inner: _Form, codec: Codec) -> None:
        super().__init__(3)
        self.inner = inner
        self.codec = codec


def packed_forms(codec: Codec) -> tuple[_Form, _Form]:
    """The forms of objects ``codec`` compresses: (complete objects, list items)."""
    return _Packed(_OBJECT, codec), _Packed(_ITEM, codec)
