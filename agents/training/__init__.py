"""Training: the config schema (:mod:`.config`), the learner's single-agent view of a game
(:mod:`.learner_env`), the opponent pool (:mod:`.opponents`), behaviour cloning (:mod:`.pretrain`), the masked
DQN (:mod:`.dqn`), the run folder (:mod:`.run_dir`), what a checkpoint holds (:mod:`.checkpoint`) and the
trainer's schedule (:mod:`.trainer`)."""
