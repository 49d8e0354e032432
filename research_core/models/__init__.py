"""Model tiers (OpenAI-compatible endpoints, local GGUF models), the gateway every call goes
through, prompts and schemas, the token ledger, embeddings."""
