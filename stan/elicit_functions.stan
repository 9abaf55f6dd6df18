  // Functions of elicit's Stan program (included into its functions block), one per part of
  // the model that needs more than a line. A program of one's own may include this file
  // (and elicit_kernel.stan) too: elicit resolves the includes from the program's folder,
  // then from the shipped programs' folder.

  // The coupled set J (CouplingData): K_ij is kept iff i and j both lie in J; the diagonal is
  // always kept (it is 1), so the masked K is a principal block of a kernel plus an identity
  // block: still positive semi-definite.
  matrix coupling_mask(array[] int coupled) {
    vector[size(coupled)] c = to_vector(coupled);
    return add_diag(c * c', 1 - c);
  }

  // The relevance scales (RelevanceData): the prior sd of each feature's weight relative to
  // tau, h_j = sqrt(lambda_j), with lambda_j = 1 if the expert called feature j relevant
  // (class 1), irrelevant_scale if irrelevant (0), and otherwise (-1, not judged)
  // lambda_u = s + (1 - s) irrelevant_scale, s = inv_logit(zeta): the variance of a feature
  // that is relevant with probability s.
  vector relevance_scales(array[] int relevance, real irrelevant_scale, real zeta) {
    int M = size(relevance);
    vector[M] h;
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
    return h;
  }
