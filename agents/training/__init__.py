"""Training from a config file, in one place per concern:

- :mod:`.config`: the config schema and its checks; :mod:`.recipe`: recipes, configs with stages that make a bot;
- :mod:`.session`: how a run is scheduled (cloning, learning, snapshots, league, evaluations, checkpoints),
  the same for every backend; :mod:`.backends`: ``train(cfg)``, which picks the backend;
- :mod:`.view`: the learner's view of a game (its seat, the opponent pool, the league, the batch of games);
- :mod:`.pretrain`: behaviour cloning, DAgger and expert iteration;
- :mod:`.sb3`: the stable-baselines3 backend (its envs, model, async rollouts, masked DQN, checkpoints);
- :mod:`.rllib`: the Ray RLlib backend (an extra);
- :mod:`.run_dir` and :mod:`.files`: the run folder, and reading and writing its files safely.
"""
