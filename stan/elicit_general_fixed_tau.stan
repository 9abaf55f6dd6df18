// elicit: the named models of elicit.model.variants other than the paper's, fixed-tau^2
// variant. It is the paper's program (elicit_fixed_tau.stan) with the two assumptions a model
// variant may change given as data: the prior sd of the threshold relative to its mean
// (threshold_sd; the paper's 0.5, the tied threshold's 0.02) and the coupled set J
// (coupled; all ones couple every feature, as in the paper). With threshold_sd = 0.5 and
// every coupled[i] = 1 it is the paper's model (a test checks that the log densities agree).
// The data and parameter names are the contract of elicit.model (StanData in
// elicit/model/spec.py, with the knobs threshold_sd and coupled).
data {
  int<lower=1> N;                            // training samples n
  int<lower=1> M;                            // features p
  int<lower=1> d;                            // meta-features per feature
  int<lower=0> N_f;                          // feedback answers (0 allowed)
  vector[N] y;                               // targets
  matrix[N, M] X;                            // inputs
  matrix[M, d] FD;                           // meta-features U
  array[N_f] int<lower=0, upper=1> f;        // answers, 1 = similar
  matrix[N_f, d] W_f;                        // (u_i - u_j)^2 of the asked pairs
  real<lower=0> a_sigma;                     // sigma^2 ~ InvGamma(a_sigma, b_sigma)
  real<lower=0> b_sigma;
  real<lower=0> tau;                         // tau^2 (a variance, as in the authors' code)
  real<lower=0> threshold_mean;              // xi ~ N+(m, threshold_sd * m)
  real<lower=0> threshold_sd;                // prior sd of xi relative to m (paper: 0.5)
  array[M] int<lower=0, upper=1> coupled;    // 1 = feature in the coupled set J
}
transformed data {
  // K_ij is kept iff i, j both lie in J; the diagonal is always kept (it is 1), so the
  // masked K is a principal block of a kernel plus an identity block: still PSD.
  vector[M] c = to_vector(coupled);
  matrix[M, M] coupling_mask = add_diag(c * c', 1 - c);
  int all_coupled = min(coupled) == 1;       // the paper's K: no mask to apply
}
parameters {
  vector<lower=0>[d] gamma;                  // inverse squared length scales
  real<lower=0> threshold;                   // the paper's xi
}
model {
  // K is local, not a transformed parameter, so that output files do not get M^2 columns.
  matrix[M, M] K;
  // kernel: begin
  {
    vector[M] s = square(FD) * gamma;
    K = exp(-0.5 * (rep_matrix(s, M) + rep_matrix(s', M)
                    - 2 * diag_post_multiply(FD, gamma) * FD'));
  }
  // kernel: end
  if (!all_coupled) {
    K = K .* coupling_mask;
  }
  gamma ~ normal(1, 0.5);
  threshold ~ normal(threshold_mean, threshold_mean * threshold_sd);
  // sigma^2 integrated out: y ~ Student-t_{2a}(0, (b/a) (I + tau^2 X K X')).
  y ~ multi_student_t(2 * a_sigma, rep_vector(0, N),
                      (b_sigma / a_sigma) * add_diag(tau * quad_form_sym(K, X'), 1));
  f ~ bernoulli_logit(threshold - W_f * gamma);
}
