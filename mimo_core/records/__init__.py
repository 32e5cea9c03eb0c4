"""What a rollout leaves behind, and how to read it back: traj.json, results.jsonl, agent_msgs/ and
the rates every table computes from them."""
