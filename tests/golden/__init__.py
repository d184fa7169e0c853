"""Golden playthroughs: one seeded game per game and rule set, recorded as text (see :mod:`.regenerate`)."""
