module preon/bench/ramp004/driver

go 1.19
