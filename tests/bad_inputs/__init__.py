"""The bad-input corpus (issue 61): what a user can mistype and what a crafted or damaged file can hold, as
generated cases, each with the outcome it must have, run against the API in this process and against the
``kahve`` command line (in this process through ``main()``, and a sample in a subprocess of its own).

Every case expects one of two outcomes:

* ``ERROR``, "one-line error": the API raises a ``ValueError`` (:class:`~kahve.agents.policies.bot.BotFileError`
  and ``IllegalActionError`` are ones) or a ``FileNotFoundError`` whose message is one line of at most
  :data:`~.runner.MAX_MESSAGE` characters; the command exits with code 2, its last line on stderr
  ``kahve COMMAND: error: ...`` (argparse's usage line may come before it), and no Python traceback.
* ``ACCEPT``, "accepted": a valid input (an unchanged file, a byte-order mark, a setting at its default...) works.

and is classified as it runs (:func:`~.runner.run_case`): ``ok``; ``traceback`` (another exception type, a message
of several lines, or a traceback on stderr); ``long message`` (one line, but longer than ``MAX_MESSAGE``: an
error quotes what it was given in part, never all of it); ``hang`` (stopped at the case's time limit);
``silent acceptance`` (a changed or invalid input accepted without an error); ``refused`` (a valid input refused).

``python -m tests.bad_inputs`` runs the whole corpus and prints the counts that docs/design.md quotes;
``tests/test_bad_inputs.py`` runs a fixed sample in the default suite and the whole corpus under ``-m slow``.
"""

from .cases import all_cases
from .runner import ACCEPT, ERROR, OUTCOMES, Case, Workspace, run_corpus, sample

__all__ = ["ACCEPT", "ERROR", "OUTCOMES", "Case", "Workspace", "all_cases", "run_corpus", "sample"]
