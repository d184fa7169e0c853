"""The learner's view of a game, the same for every backend: one seat of a table whose other seats the opponent
pool plays (:mod:`.learner_env`), a batch of such games stepped together (:mod:`.game_batch`), the pool and its
batched forward passes (:mod:`.opponents`) and league weights (:mod:`.league`)."""
