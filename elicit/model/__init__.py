"""The model: its data and Stan contract (spec), the registered variants and their parts
(variants: priors, covariance, link), the parameter layout and vector (layout, theta), the
kernel, the log density (density: the marginal of y in marginal, cached in marginal_cache,
its form chosen in form, sparse-plus-offset inputs in structure, more rows than features in
tall; batched in batch, its prior and feedback terms in terms), projected Newton (newton),
the MAP result and the posterior."""
