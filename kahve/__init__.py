"""kahve: reinforcement-learning environments for five coffeehouse card games.

The subpackages live in the repository's top-level folders (see DESIGN.md):
``kahve.envs`` (envs/), ``kahve.agents`` (agents/) and ``kahve.scripts`` (scripts/).
"""

__version__ = "0.1.0"
