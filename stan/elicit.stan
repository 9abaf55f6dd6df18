// elicit: human-in-the-loop active covariance learning (Afrabandpey, Peltola & Kaski,
// IJCAI 2019). The one Stan program of every shipped model variant and both tau^2 variants:
//
//   gamma_l ~ N+(1, 0.5),  xi ~ N+(m, threshold_sd m)          (the paper: threshold_sd = 1/2)
//   K_ij    = exp(-0.5 sum_l gamma_l (U_il - U_jl)^2)             (elicit_kernel.stan)
//   y       ~ Student-t_{2 a_sigma}(X mu, (b_sigma / a_sigma) (I + tau^2 X K X')), mu = 0
//             but with direction answers (DirectionData)
//   f_k     ~ Bernoulli(logistic(xi - gamma . w_k)),  w_k = (u_i - u_j)^2, f = 1: similar
//
// (y's Student-t is the Gaussian likelihood with the weights beta ~ N(0, sigma^2 tau^2 K) and
// sigma^2 ~ InvGamma(a_sigma, b_sigma) integrated out). The data block is the composition of
// the parts of elicit.model.stan_data, in their order, each part's fields under its name;
// a part a model does not use is switched off by data, its arrays of size 0:
//
//   TauData        tau^2 is data (tau_learned = 0: tau_fixed) or a parameter
//                  tau ~ InvGamma(a_tau, b_tau) (tau_learned = 1); as in the authors' code
//                  the name tau holds the variance tau^2
//   ThresholdData  the prior sd of xi relative to m (the tied threshold's 0.02)
//   CouplingData   the coupled set J: K = K .* coupling_mask, skipped when J holds every
//                  feature (the paper's K)
//   RelevanceData  every feature's prior scaled by the expert's relevance answers
//                  (has_relevance = 1): X becomes X diag(h), with the parameter zeta and
//                  each unjudged feature's share moved by its neighbours' answers
//   DirectionData  the direction answers (has_direction = 1): beta's prior mean is
//                  delta s with the parameter delta ~ N+(0, delta_prior_sd), so y has
//                  the mean X (delta s)
//
// The numpy twin (elicit.model.density) mirrors this program; tests check that both give the
// same log density and gradient for every named model.
functions {
#include elicit_kernel.stan
#include elicit_functions.stan
}
data {
  // RegressionData: the regression y = X beta + noise and the meta-features
  int<lower=1> N;                            // training samples n
  int<lower=1> M;                            // features p
  int<lower=1> d;                            // meta-features per feature
  vector[N] y;                               // targets
  matrix[N, M] X;                            // inputs
  matrix[M, d] FD;                           // meta-features U, one row per feature
  real<lower=0> a_sigma;                     // sigma^2 ~ InvGamma(a_sigma, b_sigma)
  real<lower=0> b_sigma;
  // AnswersData: the expert's answers about pairs of features
  int<lower=0> N_f;                          // answers (0 allowed)
  array[N_f] int<lower=0, upper=1> f;        // 1 = similar, 0 = dissimilar
  matrix[N_f, d] W_f;                        // (u_i - u_j)^2 of the asked pairs
  // ThresholdData: xi ~ N+(threshold_mean, threshold_sd * threshold_mean)
  real<lower=0> threshold_mean;
  real<lower=0> threshold_sd;
  // TauData: tau^2 fixed (data) or learned (a parameter)
  int<lower=0, upper=1> tau_learned;
  array[1 - tau_learned] real<lower=0> tau_fixed;    // tau^2 of the fixed variant
  array[tau_learned] real<lower=0> a_tau;            // tau ~ InvGamma(a_tau, b_tau)
  array[tau_learned] real<lower=0> b_tau;
  // CouplingData: the coupled set J
  array[M] int<lower=0, upper=1> coupled;    // 1 = feature in J (all 1: the paper's K)
  // RelevanceData: the expert's relevance answers and the prior of zeta
  int<lower=0, upper=1> has_relevance;
  array[has_relevance ? M : 0] int<lower=-1, upper=1> relevance;  // 1, 0, -1 not judged
  array[has_relevance] real<lower=0, upper=1> irrelevant_scale;   // lambda of an irrelevant one
  array[has_relevance] real zeta_prior_mean;                      // zeta ~ normal(mean, sd)
  array[has_relevance] real<lower=0> zeta_prior_sd;
  vector[has_relevance ? M : 0] relevance_signal;   // neighbours' weighted mean answer
  array[has_relevance] real relevance_spread;       // how far an answer reaches
  // DirectionData: the direction answers' signs and the prior of delta
  int<lower=0, upper=1> has_direction;
  vector[has_direction ? M : 0] direction_signs;    // +1 raises, -1 lowers, 0 not known
  array[has_direction] real<lower=0> delta_prior_sd;
}
transformed data {
  int all_coupled = min(coupled) == 1;       // the paper's K: no mask to apply
  matrix[M, M] mask = coupling_mask(coupled);
}
parameters {
  vector<lower=0>[d] gamma;                  // inverse squared length scales
  real<lower=0> threshold;                   // the paper's xi
  array[tau_learned] real<lower=0> tau;      // tau^2 of the learned variant
  array[has_relevance] real zeta;            // logit of the share of relevant unjudged features
  array[has_direction] real<lower=0> delta;  // magnitude of the direction answers' mean
}
model {
  // K and X K X' are local, not transformed parameters, so that CmdStan's output has no
  // M^2 kernel columns. Each branch keeps X data where it can: X diag(h) would make the
  // product with K a parameter-by-parameter one.
  matrix[M, M] K = kernel(FD, gamma);
  matrix[N, N] XKX;
  if (!all_coupled) {
    K = K .* mask;
  }
  if (has_relevance) {
    vector[M] h = relevance_scales(relevance, irrelevant_scale[1], zeta[1],
                                   relevance_signal, relevance_spread[1]);
    XKX = quad_form_sym(K, diag_post_multiply(X, h)');
  } else {
    XKX = quad_form_sym(K, X');
  }
  gamma ~ normal(1, 0.5);
  threshold ~ normal(threshold_mean, threshold_mean * threshold_sd);
  tau ~ inv_gamma(a_tau, b_tau);             // no term when tau^2 is fixed (size 0)
  zeta ~ normal(zeta_prior_mean, zeta_prior_sd);
  delta ~ normal(0, delta_prior_sd);
  // sigma^2 integrated out: y ~ Student-t_{2a}(X mu, (b/a) (I + tau^2 X K X')), mu = delta s
  y ~ multi_student_t(2 * a_sigma,
                      has_direction ? X * (delta[1] * direction_signs) : rep_vector(0, N),
                      (b_sigma / a_sigma)
                      * add_diag((tau_learned ? tau[1] : tau_fixed[1]) * XKX, 1));
  f ~ bernoulli_logit(threshold - W_f * gamma);
}
