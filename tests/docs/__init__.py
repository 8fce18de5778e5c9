"""The docs and examples: code shown is code run, samples generated, diagrams render."""
