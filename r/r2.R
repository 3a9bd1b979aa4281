# Pieces for R-squared and ICC of Gaussian linear mixed models (Nakagawa & Schielzeth 2013;
# Johnson 2014), computed as MuMIn's r.squaredGLMM does for Gaussian models: var(X beta) of the
# fixed-effect design and fixed effects, and for every random-effect term (in VarCorr's order)
# mean_i(z_i' Sigma z_i) of its raw model matrix (lme4's model.matrix(type = "randomListRaw"))
# and its VarCorr covariance matrix, plus sigma. Only these numbers go back to Python.

me_r2_parts <- function(m) {
  X <- lme4::getME(m, "X")
  mm <- stats::model.matrix(m, type = "randomListRaw")
  vc <- lme4::VarCorr(m)
  cnms <- lme4::getME(m, "cnms")  # VarCorr's order, named by grouping factor
  # The grouping factor of each raw model matrix, named as lme4 names cnms/VarCorr
  # (barnames: deparse1 of the bar's right-hand side). names(mm) are whole deparsed bar terms
  # ("1 | `item id`"), whose group part is back-quoted for non-syntactic names, so the group
  # is looked up from the same findbars() terms mmList() used, not cut out of the string.
  bars <- lme4::findbars(stats::formula(m))
  bar_group <- stats::setNames(vapply(bars, function(b) deparse1(b[[3]]), ""),
                               vapply(bars, deparse1, ""))
  mm_group <- unname(bar_group[names(mm)])
  if (anyNA(mm_group)) stop("could not match the random-effect terms of the model matrix to the formula's bars")
  used <- rep(FALSE, length(mm))
  terms <- lapply(seq_along(vc), function(k) {
    S <- vc[[k]]
    cols <- rownames(S)
    g <- names(cnms)[k]
    ok <- which(!used & mm_group == g &
                  vapply(mm, function(z) all(cols %in% colnames(z)) && ncol(z) == length(cols), TRUE))
    if (!length(ok)) stop(sprintf("no random-effect model matrix found for VarCorr term %d (%s | %s)",
                                  k, paste(cols, collapse = " + "), g))
    used[ok[1]] <<- TRUE
    Z <- mm[[ok[1]]][, cols, drop = FALSE]
    list(group = g, term = names(mm)[ok[1]], contribution = sum((Z %*% S) * Z) / nrow(Z))
  })
  list(var_fixed = stats::var(drop(X %*% lme4::fixef(m))),
       sigma = stats::sigma(m),
       group = vapply(terms, function(t) t$group, ""),
       term = vapply(terms, function(t) t$term, ""),
       contribution = vapply(terms, function(t) as.numeric(t$contribution), 0))
}
