"""``backend: sb3``: training with stable-baselines3 in this process: the session (:mod:`.session`), the envs and the
model (:mod:`.model`), kahve's vector envs (:mod:`.vec_env`), async rollouts (:mod:`.async_rollouts`), the
action-feature head (:mod:`.action_features`), the masked DQN (:mod:`.dqn`) and what a checkpoint holds
(:mod:`.checkpoint`)."""
