"""The ``%%hogql`` magic (``hogql.py``) and the ``{name}`` placeholders it binds from the notebook's variables
(``placeholders.py``, the server's lexical rules without importing the server).

``%load_ext hoglab`` registers it; loading it imports IPython only (no pandas, no matplotlib, no server).
"""

from __future__ import annotations

from .hogql import HogQLMagics, load_ipython_extension, unload_ipython_extension

__all__ = ["HogQLMagics", "load_ipython_extension", "unload_ipython_extension"]
