  // The kernel of elicit's Stan program (included into its functions block): the prior
  // correlation of the regression weights from the meta-features U (one row per feature),
  //   K_ij = exp(-0.5 * sum_l gamma_l (U_il - U_jl)^2),
  // in the gram form: sum_l gamma_l (U_il - U_jl)^2 = s_i + s_j - 2 (U diag(gamma) U')_ij with
  // s = square(U) * gamma, one parameter-by-data matrix product instead of p^2 / 2 dot
  // products (docs/stan.md, "Kernel formulation", times the alternatives: a file of this name
  // earlier on the include path replaces this one).
  matrix kernel(matrix U, vector gamma) {
    int M = rows(U);
    vector[M] s = square(U) * gamma;
    return exp(-0.5 * (rep_matrix(s, M) + rep_matrix(s', M)
                       - 2 * diag_post_multiply(U, gamma) * U'));
  }
