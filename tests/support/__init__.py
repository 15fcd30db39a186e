"""Test helpers: real local servers (llama.cpp, a fault-injecting OpenAI-compatible server)."""
