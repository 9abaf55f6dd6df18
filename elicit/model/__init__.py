"""The model: data and Stan contract (spec), variants, parameter layout, kernel, log density
(the marginal of y, its cache and forms; batched), projected Newton, the MAP result and the
posterior."""
