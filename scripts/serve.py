"""``kahve serve``: a local web table (not built yet)."""


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    raise ValueError("kahve serve is not available yet")
