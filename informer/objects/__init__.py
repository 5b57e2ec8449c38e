"""Kubernetes objects as read-only mappings over their raw JSON.

A ``KubeObject`` holds the raw JSON bytes it came in and, decoded up front, only what the cache
needs for every object: its key (``namespace/name``), namespace, resourceVersion, kind and
apiVersion. Everything else is decoded when read:

* ``uid``, ``labels`` and ``deletionTimestamp`` are decoded together on first access and kept
  (a label index or selector reads them for every object; a plain cache never does).
* The rest is decoded as far as it is read: the object is split into its members once (slices
  of its JSON), a member decoded when read, a large object or array in it split one level at a
  time (``obj["spec"]["containers"][0]["image"]`` decodes its path; iteration, ``len`` and
  ``in`` read the keys only; equality and ``repr`` decode the rest). What was read is kept in a
  small process-wide memo of the most recently read objects (:func:`set_decoded_cache_size`,
  default 256 objects): reading ``obj["spec"]`` then ``obj["status"]`` decompresses once and
  decodes each once, and reading every cached object once leaves the cache as small as before
  (at most that many decodes are alive at a time). Keeping each decode for the object's
  lifetime held 2.4x (ConfigMaps) to 6.5x (Pods) the JSON; a decode on every access without a
  memo would make a controller reading several fields of one object pay for each.

The bytes are shared, never re-encoded: a list item keeps its slice of the page (one copy, without
``kind``/``apiVersion``, which a list states once and the full decode adds back), a watch event
keeps its line (the envelope around the object costs about 30 bytes). Both decode to exactly what
a plain decode of the object (with the list's kind and apiVersion) returns.
"""

from informer.objects._decoded import _memo, set_decoded_cache_size
from informer.objects._forms import Codec, PagePacking, _Form
from informer.objects._frozen import freeze
from informer.objects._object import Known, KubeObject, Trim
from informer.objects._wire import ObjectMeta

__all__ = ["KubeObject", "ObjectMeta", "freeze", "set_decoded_cache_size"]
__all__ += ["Codec", "Known", "PagePacking", "Trim", "_Form", "_memo"]  # package-internal
