"""The book's tools under one command line: ``python -m bookcli COMMAND [ARGS]``.

Run with ``tools/`` on the path (the Makefile sets ``PYTHONPATH=tools``)::

    PYTHONPATH=tools .venv/bin/python -m bookcli --help          # the commands, one line each
    PYTHONPATH=tools .venv/bin/python -m bookcli portable --all  # = python tools/portable.py --all

Each command is one product or check of tools/ (:data:`bookcli.__main__.COMMANDS`), and
runs that module's ``main`` with the arguments that follow, exactly as
``python tools/NAME.py ARGS`` does (same ``sys.path``, same environment for the programs
it starts). The scripts stay runnable by path.

Imports point one way: the core (:mod:`bookkit`) <- the products (tools/*.py) <- this
command line. Nothing imports ``bookcli``; it imports a product only when its command
runs, so ``--help`` and the standard-library products (tools/problem_set_length.py,
tools/fetch_axe.py, tools/check_standalone.py) run under any Python 3.
"""
