"""The ``ctxpack`` command line: a thin click layer over :mod:`compactor_core`."""
