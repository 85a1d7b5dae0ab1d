"""Review backends: rules (offline), anthropic, bedrock — one interface, one finding schema."""
