"""Sphinx extension (owned by the launch-button work of issue 12): placeholder."""


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
