"""Assets, one module per stage of the flow; each is thin: call core, return a DataFrame."""
