"""The model: its data and Stan contract (spec), the registered variants and their parts
(variants: priors, covariance, link), the parameter layout, the kernel, the log density
(density, batched in batch, its prior and feedback terms in terms), projected Newton
(newton), the MAP result and the posterior."""
