"""Evaluation: head-to-head matches with mirrored deals and 95% intervals (:mod:`.evaluate`), leagues and
ratings (:mod:`.league`, :mod:`.ratings`), bot reports (:mod:`.report`) and game records (:mod:`.records`)."""
