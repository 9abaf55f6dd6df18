// elicit: human-in-the-loop active covariance learning (Afrabandpey, Peltola & Kaski,
// IJCAI 2019), model 'tied-threshold', fixed-tau^2 variant. It is the paper's program
// (elicit_fixed_tau.stan) with these assumptions:
// tied threshold: xi ~ N+(m, 0.02 m), i.e. the similarity threshold is set by the
// meta-features' distance scale (threshold_mean), not learned from the answers, so the
// answers must move gamma (elicit.model.variants.TIED_THRESHOLD_SD = 0.02).
// The data and parameter names are the contract of elicit.model (CONTRACT_DATA["fixed"]
// plus the model's extra data, elicit.model.variants).
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
  real<lower=0> threshold_mean;              // xi ~ N+(m, 0.02 m)
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
  gamma ~ normal(1, 0.5);
  threshold ~ normal(threshold_mean, threshold_mean * 0.02);
  // sigma^2 integrated out: y ~ Student-t_{2a}(0, (b/a) (I + tau^2 X K X')).
  y ~ multi_student_t(2 * a_sigma, rep_vector(0, N),
                      (b_sigma / a_sigma) * add_diag(tau * quad_form_sym(K, X'), 1));
  f ~ bernoulli_logit(threshold - W_f * gamma);
}
