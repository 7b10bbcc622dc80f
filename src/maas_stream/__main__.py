"""``python -m maas_stream``: the command line."""

from ._cli import main

raise SystemExit(main())
