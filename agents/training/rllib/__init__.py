"""``backend: rllib``: training with Ray RLlib's PPO on the env runners of one machine or a cluster (the ``rllib``
extra; :mod:`.session`)."""
