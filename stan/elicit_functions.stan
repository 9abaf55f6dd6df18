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
  // lambda_j = s_j + (1 - s_j) irrelevant_scale, s_j = inv_logit(zeta + spread * signal_j):
  // the variance of a feature that is relevant with probability s_j, where signal_j is the
  // weighted mean answer about j's neighbours in meta-feature space (data, computed by elicit
  // from the answers: elicit.model.covariance.RelevanceScales.signal).
  vector relevance_scales(array[] int relevance, real irrelevant_scale, real zeta,
                          vector signal, real spread) {
    int M = size(relevance);
    vector[M] h;
    for (j in 1:M) {
      if (relevance[j] == 1) {
        h[j] = 1;
      } else if (relevance[j] == 0) {
        h[j] = sqrt(irrelevant_scale);
      } else {
        real share = inv_logit(zeta + spread * signal[j]);
        h[j] = sqrt(share + (1 - share) * irrelevant_scale);
      }
    }
    return h;
  }
