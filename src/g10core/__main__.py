"""`python -m g10core` is the same command as `g10sim`."""
import sys

from .cli import main

sys.exit(main())
