import gc
import sys

# The start imports some 300 modules, whose classes and dicts would set off the cyclic garbage
# collector dozens of times for nothing (about 10 ms of every start). kafkalite.broker.fast_start turns it back on
# once the imports are done, before any data is loaded.
gc.disable()

from kafkalite.broker.cli import main  # noqa: E402

sys.exit(main())
