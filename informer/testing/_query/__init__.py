"""What a request asks for, parsed and validated as the apiserver does it.

``list_options`` (resourceVersion, match, limit, continue, sendInitialEvents: strconv parsing and
ListOptions validation per personality), ``selectors`` (label and field selectors),
``field_labels`` (the field labels each kind converts and matches), ``sharding`` (KEP-5866
``shardSelector``), ``write_options`` (dryRun, fieldManager, fieldValidation, force). Imports
only the leaves ``_status`` and ``_options`` and the product's leaves.
"""
