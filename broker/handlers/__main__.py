"""Print which module handles each API key: `python -m kafkalite.broker.handlers`."""

from __future__ import annotations

from . import handler_table

for key, name, versions, where in handler_table():
    print(f"{key:>3}  {name:<32} {versions:<8} {where}")
