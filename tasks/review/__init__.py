"""Review: chunk, route, and review chunks with a backend (rules, anthropic, bedrock, batches)."""
