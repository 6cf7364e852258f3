"""EdgeKernelBench: tasks, the evaluator, baselines and metrics."""
