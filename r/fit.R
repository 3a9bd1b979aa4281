# Fitting linear mixed models with lmerTest::lmer and extracting tidy tables.

me_control <- function(optimizer, calc_derivs = TRUE) {
  lme4::lmerControl(optimizer = optimizer,
                    calc.derivs = calc_derivs,
                    check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4))
}

me_fit <- function(formula, data, reml = TRUE, optimizer = "nloptwrap", calc_derivs = TRUE) {
  f <- stats::as.formula(formula)
  m <- lmerTest::lmer(f, data = data, REML = reml, control = me_control(optimizer, calc_derivs))
  m
}

# Convergence status as lme4 reports it: optimizer code plus lme4's own checks.
me_convergence <- function(m) {
  oi <- m@optinfo
  msgs <- c(oi$conv$lme4$messages, oi$warnings)
  msgs <- vapply(msgs, function(x) paste(as.character(x), collapse = " "), character(1))
  code <- oi$conv$opt
  if (is.null(code)) code <- 0L
  list(converged = (length(msgs) == 0L) && isTRUE(code == 0),
       optimizer_code = as.integer(code),
       messages = unname(as.character(msgs)))
}

# The fixed-effect coefficients with R's own column labels (renamed in Python by
# mixedeval/engine/names.py COEFFICIENTS): lmerTest's summary(m, ddf = ddf)$coefficients
# (Estimate, Std. Error, df, t value, Pr(>|t|)), or for ddf = "asymptotic" z tests labelled as
# lme4 labels them (df = Inf, z value, Pr(>|z|)); plus the Wald interval estimate -+
# qt(1 - (1 - level) / 2, df) * SE as lower / upper.
me_fixed_table <- function(m, ddf = "Satterthwaite", level = 0.95) {
  if (ddf == "asymptotic") {
    cf <- summary(m, ddf = "lme4")$coefficients
    z <- unname(cf[, 3])
    tab <- data.frame(Estimate = unname(cf[, 1]), SE = unname(cf[, 2]), df = Inf, z = z,
                      p = 2 * stats::pnorm(-abs(z)))
    names(tab) <- c("Estimate", "Std. Error", "df", "z value", "Pr(>|z|)")
  } else {
    cf <- summary(m, ddf = ddf)$coefficients
    tab <- as.data.frame(unclass(cf)[, c("Estimate", "Std. Error", "df", "t value", "Pr(>|t|)"), drop = FALSE],
                         optional = TRUE)
  }
  rownames(tab) <- NULL
  q <- stats::qt(1 - (1 - level) / 2, tab[["df"]])
  tab$lower <- tab[["Estimate"]] - q * tab[["Std. Error"]]
  tab$upper <- tab[["Estimate"]] + q * tab[["Std. Error"]]
  cbind(data.frame(term = rownames(cf), stringsAsFactors = FALSE), tab)
}

# as.data.frame(VarCorr(m), order = "lower.tri") with its own labels (grp, var1, var2, vcov,
# sdcor): one row per variance and per covariance, the residual last (renamed and split into
# std_dev / corr in Python: mixedeval/engine/_bridge.py).
me_random_table <- function(m) {
  vc <- as.data.frame(lme4::VarCorr(m), order = "lower.tri")
  data.frame(grp = as.character(vc$grp), var1 = as.character(vc$var1), var2 = as.character(vc$var2),
             vcov = vc$vcov, sdcor = vc$sdcor, stringsAsFactors = FALSE)
}

me_fit_summary <- function(m, ddf = "Satterthwaite", level = 0.95) {
  ll <- stats::logLik(m)
  ng <- lme4::ngrps(m)
  list(
    fixed = me_fixed_table(m, ddf, level),
    random = me_random_table(m),
    sigma = stats::sigma(m),
    loglik = as.numeric(ll),
    df_loglik = as.integer(attr(ll, "df")),
    aic = stats::AIC(m),
    bic = stats::BIC(m),
    deviance = if (lme4::isREML(m)) as.numeric(lme4::REMLcrit(m)) else stats::deviance(m),
    nobs = as.integer(stats::nobs(m)),
    ngroups_names = names(ng),
    ngroups = as.integer(ng),
    reml = lme4::isREML(m),
    singular = lme4::isSingular(m, tol = 1e-4),
    convergence = me_convergence(m),
    optimizer = m@optinfo$optimizer,
    response = deparse(stats::formula(m)[[2]]),
    formula = paste(deparse(stats::formula(m), width.cutoff = 500L), collapse = " ")
  )
}

# Fit and summarise in one call (the common path: one round trip).
me_fit_and_summarise <- function(formula, data, reml = TRUE, optimizer = "nloptwrap",
                                 ddf = "Satterthwaite", level = 0.95, calc_derivs = TRUE) {
  m <- me_fit(formula, data, reml, optimizer, calc_derivs)
  c(list(model = m), me_fit_summary(m, ddf, level))
}

# A fitted model as bytes (base::serialize) and back: worker processes receive the caller's model
# itself instead of refitting it (lme4 re-creates its external pointers on first use).
me_serialize_model <- function(m) serialize(m, NULL)

me_unserialize_model <- function(bytes) unserialize(bytes)

me_model_values <- function(m) {
  list(y = unname(as.numeric(stats::model.response(stats::model.frame(m)))),
       fitted_conditional = unname(stats::fitted(m)),
       fitted_population = unname(stats::predict(m, re.form = NA)),
       residuals = unname(stats::residuals(m)))
}

me_model_frame <- function(m) {
  mf <- stats::model.frame(m)
  attr(mf, "terms") <- NULL
  as.data.frame(lapply(mf, function(col) if (is.matrix(col)) col[, 1] else col),
                check.names = FALSE, stringsAsFactors = FALSE)
}

me_ranef <- function(m) {
  re <- lme4::ranef(m)
  lapply(re, function(d) {
    d <- as.data.frame(d, check.names = FALSE)
    cbind(data.frame(level = rownames(d), stringsAsFactors = FALSE), d)
  })
}

me_simulate <- function(m, nsim, seed, conditional = FALSE) {
  re_form <- if (conditional) NULL else NA
  s <- stats::simulate(m, nsim = nsim, seed = seed, re.form = re_form)
  as.matrix(s)
}

me_refit <- function(m, reml) {
  if (isTRUE(reml) == lme4::isREML(m)) return(m)
  if (!isTRUE(reml)) {
    m2 <- lme4::refitML(m)
    return(lmerTest::as_lmerModLmerTest(m2))
  }
  stats::update(m, REML = TRUE)
}

# Refit by REML or ML and summarise in one call (the refit path of LMMFit.refit).
me_refit_and_summarise <- function(m, reml, ddf = "Satterthwaite", level = 0.95) {
  m2 <- me_refit(m, reml)
  c(list(model = m2), me_fit_summary(m2, ddf, level))
}
