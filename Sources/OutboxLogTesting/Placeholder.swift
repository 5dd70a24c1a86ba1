// placeholder until the simulated file system lands
