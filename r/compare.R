# Likelihood-ratio tests between nested mixed models (lme4's anova.merMod) and pbkrtest's
# parametric bootstrap (PBmodcomp; lmer and glmer fits), run in chunks so Python can show progress.

# Do the models share their fixed-effect design (same columns, same values) and response?
# REML likelihoods are comparable only when the fixed-effect design matrix is identical.
me_compare_check <- function(models) {
  X0 <- lme4::getME(models[[1]], "X")
  y0 <- lme4::getME(models[[1]], "y")
  same_x <- vapply(models, function(m) {
    X <- lme4::getME(m, "X")
    nm <- colnames(X)
    identical(dim(X), dim(X0)) && setequal(nm, colnames(X0)) && !anyDuplicated(nm) &&
      isTRUE(all(X[, colnames(X0), drop = FALSE] == X0))
  }, logical(1))
  same_y <- vapply(models, function(m) {
    y <- lme4::getME(m, "y")
    length(y) == length(y0) && isTRUE(all(y == y0))
  }, logical(1))
  list(fixed_equal = all(same_x), response_equal = all(same_y),
       reml = vapply(models, lme4::isREML, logical(1)))
}

# Random-effect parameters of a model as keys: variances "group\rterm" and covariances
# "group\rterm1\rterm2" (lme4's cnms: grouping factor names without VarCorr's ".1" suffixes).
me_re_keys <- function(m) {
  cn <- m@cnms
  g <- names(cn)
  v <- character(0)
  cv <- character(0)
  for (i in seq_along(cn)) {
    tt <- cn[[i]]
    v <- c(v, paste(g[i], tt, sep = "\r"))
    if (length(tt) > 1L) {
      pr <- utils::combn(tt, 2L)
      cv <- c(cv, paste(g[i], pr[1L, ], pr[2L, ], sep = "\r"))
    }
  }
  list(var = v, cov = cv)
}

# The 50:50 mixture of chi-square(df - 1) and chi-square(df) (Self & Liang 1987; Stram & Lee
# 1994) when `large` adds exactly one variance (and its covariances in the same block) to
# `small`; NA otherwise.
me_lrt_mixture <- function(small, large, chisq, df) {
  ks <- me_re_keys(small)
  kl <- me_re_keys(large)
  if (!all(ks$var %in% kl$var) || !all(ks$cov %in% kl$cov)) return(NA_real_)
  add_v <- setdiff(kl$var, ks$var)
  add_c <- setdiff(kl$cov, ks$cov)
  if (length(add_v) != 1L || is.na(df) || df != 1L + length(add_c)) return(NA_real_)
  new <- strsplit(add_v, "\r", fixed = TRUE)[[1]]
  for (k in add_c) {
    p <- strsplit(k, "\r", fixed = TRUE)[[1]]
    if (p[1L] != new[1L] || !(new[2L] %in% p[2:3])) return(NA_real_)
  }
  0.5 * stats::pchisq(chisq, df, lower.tail = FALSE) +
    0.5 * stats::pchisq(chisq, df - 1, lower.tail = FALSE)
}

# lme4's anova(m0, m1, ..., refit = refit) with the rows named `model_names` (ordered by the
# number of parameters, as lme4 does), plus the mixture p-value of consecutive rows when
# `mixture` is TRUE (random-effect-only differences).
me_compare <- function(models, model_names, refit, mixture = FALSE) {
  mods <- lapply(models, function(m) methods::as(m, "lmerMod"))
  a <- do.call(stats::anova, c(mods, list(refit = refit, model.names = model_names)))
  tab <- a
  class(tab) <- "data.frame"
  attr(tab, "heading") <- NULL
  ord <- match(rownames(a), model_names)
  tab <- cbind(data.frame(model = rownames(a), stringsAsFactors = FALSE), tab)
  rownames(tab) <- NULL
  pmix <- rep(NA_real_, nrow(tab))
  if (isTRUE(mixture) && nrow(tab) > 1L) {
    chisq <- a[["Chisq"]]
    df <- a[[if ("Chi Df" %in% names(a)) "Chi Df" else "Df"]]
    for (i in 2:nrow(tab)) {
      pmix[i] <- me_lrt_mixture(models[[ord[i - 1L]]], models[[ord[i]]], chisq[i], df[i])
    }
  }
  list(table = tab, p_mixture = pmix)
}

# Parametric bootstrap of the likelihood-ratio statistic, exactly as
# set.seed(seed); pbkrtest::PBmodcomp(large, small, nsim = nsim) draws it (pbkrtest 0.5.2:
# both models refitted by ML with update(), all nsim responses simulated at once from the small
# model, then each replicate refitted); split into setup / chunks / finish.
me_pb_setup <- function(large, small, nsim, seed = NULL) {
  if (!is.null(seed)) set.seed(seed)
  if (lme4::getME(small, "is_REML")) small <- stats::update(small, REML = FALSE)
  if (lme4::getME(large, "is_REML")) large <- stats::update(large, REML = FALSE)
  state <- new.env()
  state$sm <- small
  state$lg <- large
  state$sims <- stats::simulate(small, nsim = nsim, seed = NULL)
  state
}

# The state's two ML models as bytes (base::serialize of list(small, large)): worker processes
# refit from these very models instead of fitting them again.
me_pb_models <- function(state) serialize(list(small = state$sm, large = state$lg), NULL)

me_pb_chunk <- function(state, first, last) {
  unname(vapply(state$sims[first:last], function(yyy) {
    sm2 <- suppressMessages(lme4::refit(state$sm, newresp = yyy))
    lg2 <- suppressMessages(lme4::refit(state$lg, newresp = yyy))
    as.numeric(2 * (stats::logLik(lg2, REML = FALSE) - stats::logLik(sm2, REML = FALSE)))
  }, numeric(1)))
}

# The simulated responses of a bootstrap state, to refit them elsewhere: nobs x nsim, or
# nobs x (2 * nsim) for a cbind(successes, failures) GLMM response (the two columns of replicate j
# are 2j - 1 and 2j: as.matrix of simulate()'s data frame of two-column matrices).
me_pb_sims <- function(state) {
  unname(as.matrix(state$sims))
}

# The likelihood-ratio statistics of the replicates in `ysim` (me_pb_sims' layout: one column per
# replicate, two for a two-column response) refitted from ML fits `small` and `large` made in this
# R session (what me_pb_chunk computes from the state's own ML fits: an ML fit of the same formula
# and data equals update(m, REML = FALSE), and a glmer fit is ML already). lme4's refit() takes a
# two-column binomial response as the matrix simulate() returns.
me_pb_refit <- function(small, large, ysim) {
  ysim <- as.matrix(ysim)
  width <- NCOL(stats::model.response(stats::model.frame(small)))
  unname(vapply(seq_len(ncol(ysim) %/% width), function(j) {
    yyy <- if (width == 1L) ysim[, j] else ysim[, (j - 1L) * width + seq_len(width), drop = FALSE]
    sm2 <- suppressMessages(lme4::refit(small, newresp = yyy))
    lg2 <- suppressMessages(lme4::refit(large, newresp = yyy))
    as.numeric(2 * (stats::logLik(lg2, REML = FALSE) - stats::logLik(sm2, REML = FALSE)))
  }, numeric(1)))
}

me_pb_finish <- function(large, small, ref) {
  pb <- pbkrtest::PBmodcomp(large, small, ref = ref)
  s <- summary(pb)
  tab <- cbind(data.frame(test = rownames(s$test), stringsAsFactors = FALSE), s$test)
  rownames(tab) <- NULL
  list(test = tab, nsim = length(ref), npos = sum(ref > 0), n_extreme = s$n.extreme)
}
