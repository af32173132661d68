"""``python -m instant_embedding``: the same as the ``instant-embedding`` command."""

from .cli import main

raise SystemExit(main())
