// elicit: the relevance model of elicit.model.variants, fixed-tau^2 variant. It is the paper's
// program (elicit_fixed_tau.stan) with every feature's prior scaled by the expert's relevance
// answers:
//   beta | sigma^2 ~ N(0, sigma^2 tau^2 L^(1/2) K L^(1/2)),  L = diag(lambda),
//   lambda_j = 1 (called relevant), irrelevant_scale (called irrelevant),
//              lambda_u = s + (1 - s) irrelevant_scale otherwise, s = inv_logit(zeta),
//   zeta ~ normal(zeta_prior_mean, zeta_prior_sd).
// zeta is the logit of the share of relevant features among those the expert has not judged;
// lambda_u is the variance of a feature that is relevant (scale 1) with probability s and
// irrelevant otherwise. The answers are data (relevance), not a likelihood on zeta.
// The data and parameter names are the contract of elicit.model (StanData in
// elicit/model/spec.py, with the relevance model's data).
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
  real<lower=0> threshold_mean;              // xi ~ N+(m, m / 2)
  array[M] int<lower=-1, upper=1> relevance; // 1 relevant, 0 irrelevant, -1 not judged
  real<lower=0, upper=1> irrelevant_scale;   // lambda of an irrelevant feature (eps)
  real zeta_prior_mean;                      // zeta ~ normal(zeta_prior_mean, zeta_prior_sd)
  real<lower=0> zeta_prior_sd;
}
parameters {
  vector<lower=0>[d] gamma;                  // inverse squared length scales
  real<lower=0> threshold;                   // the paper's xi
  real zeta;                                 // logit of the share of relevant unjudged features
}
model {
  // K is local, not a transformed parameter, so that output files do not get M^2 columns.
  matrix[M, M] K;
  vector[M] h;                               // per-feature prior scales sqrt(lambda)
  // kernel: begin
  {
    vector[M] s = square(FD) * gamma;
    K = exp(-0.5 * (rep_matrix(s, M) + rep_matrix(s', M)
                    - 2 * diag_post_multiply(FD, gamma) * FD'));
  }
  // kernel: end
  {
    real share = inv_logit(zeta);
    real lambda_u = share + (1 - share) * irrelevant_scale;
    for (j in 1:M) {
      if (relevance[j] == 1) {
        h[j] = 1;
      } else if (relevance[j] == 0) {
        h[j] = sqrt(irrelevant_scale);
      } else {
        h[j] = sqrt(lambda_u);
      }
    }
  }
  gamma ~ normal(1, 0.5);
  threshold ~ normal(threshold_mean, threshold_mean / 2);
  zeta ~ normal(zeta_prior_mean, zeta_prior_sd);
  // sigma^2 integrated out: y ~ Student-t_{2a}(0, (b/a) (I + tau^2 (X diag(h)) K (X diag(h))')).
  y ~ multi_student_t(2 * a_sigma, rep_vector(0, N),
                      (b_sigma / a_sigma)
                      * add_diag(tau * quad_form_sym(K, diag_post_multiply(X, h)'), 1));
  f ~ bernoulli_logit(threshold - W_f * gamma);
}
