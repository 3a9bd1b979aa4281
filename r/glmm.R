# Generalized linear mixed models: lme4::glmer (binomial, poisson), lme4::glmer.nb (negative
# binomial) and glmmTMB::glmmTMB (beta, beta-binomial), with tidy tables.
#
# Every fit is a direct call whose stored call refers to the data by the name `data` and to the
# family / control by local names (never inlined objects), so update()/refit steps re-evaluate it
# in the fitting function's frame (environment(formula(m))) without copying the data.

# The R family object for a mixedeval family name and link (NULL: the family's default link).
me_glmm_family <- function(family, link = NULL) {
  switch(family,
    binomial = if (is.null(link)) stats::binomial() else stats::binomial(link = link),
    poisson = if (is.null(link)) stats::poisson() else stats::poisson(link = link),
    beta = if (is.null(link)) glmmTMB::beta_family() else glmmTMB::beta_family(link = link),
    betabinomial = if (is.null(link)) glmmTMB::betabinomial() else glmmTMB::betabinomial(link = link),
    stop(sprintf("unknown family '%s'", family))
  )
}

# glmerControl with lme4's defaults except that a singular fit is reported by mixedeval (not
# warned twice). `optimizer`: NULL = lme4's own default (c("bobyqa", "Nelder_Mead") in 1.1-31:
# bobyqa for the nAGQ = 0 stage, Nelder-Mead for the final stage), one name for both stages, or
# two names (stage 1, stage 2), as glmerControl(optimizer = ...) takes them.
me_glmm_control <- function(optimizer = NULL, calc_derivs = TRUE) {
  if (is.null(optimizer)) {
    return(lme4::glmerControl(calc.derivs = calc_derivs,
                              check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4)))
  }
  lme4::glmerControl(optimizer = as.character(optimizer), calc.derivs = calc_derivs,
                     check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4))
}

# Which covariance of the fixed effects to trust. lme4's vcov() of a glmer fit with nAGQ >= 1
# inverts the finite-difference Hessian of the deviance in (theta, beta) (use.hessian = TRUE);
# the alternative is the RX-based matrix sigma^2 (RX'RX)^-1 of the penalised least-squares step
# at the optimum (use.hessian = FALSE), which conditions on theta. On a well-behaved fit the two
# standard errors agree to a few percent (cbpp, VerbAgg: within 0.3%). At a boundary (a variance
# component estimated at ~0) or on a flat, ill-conditioned optimum the finite differences straddle
# the boundary or pick up the deviance's numerical noise and the Hessian can be non-positive-
# definite or collapse (0.0013 against 0.25). Rule: when the Hessian is unavailable nothing
# changes; when it is not positive definite, has NA, or some standard error differs from the
# RX-based one by more than `rtol` (10%), the Hessian is dropped from the fit
# (m@optinfo$derivs$Hessian <- NULL), so that summary(), vcov(), emmeans and car::Anova all use
# the RX-based matrix, and a message says which and why.
me_glmm_vcov_check <- function(m, rtol = 0.10) {
  out <- list(model = m, unstable = FALSE, message = NA_character_, max_ratio = NA_real_)
  if (me_is_tmb(m)) return(out)
  h <- m@optinfo$derivs$Hessian
  ntheta <- length(lme4::getME(m, "theta"))
  if (is.null(h) || nrow(h) <= ntheta) return(out)
  v_rx <- as.matrix(suppressWarnings(vcov(m, use.hessian = FALSE)))
  hi <- tryCatch(solve(h), error = function(e) NULL)
  bad <- is.null(hi) || anyNA(hi)
  if (!bad) {
    i <- -seq_len(ntheta)
    vh <- 2 * hi[i, i, drop = FALSE]  # vcov.merMod: forceSymmetric(h^-1 + t(h^-1)) of the deviance Hessian
    vh <- (vh + t(vh)) / 2
    ev <- eigen(vh, symmetric = TRUE, only.values = TRUE)$values
    bad <- any(!is.finite(ev)) || min(ev) <= 0
  }
  se_rx <- sqrt(diag(v_rx))
  if (!bad) {
    ratio <- sqrt(diag(vh)) / se_rx
    out$max_ratio <- max(abs(log(ratio)))
    names(ratio) <- colnames(v_rx)
    if (!any(abs(log(ratio)) > log1p(rtol))) return(out)
    worst <- which.max(abs(log(ratio)))
    why <- sprintf("the Hessian-based standard error of %s is %.3g times the RX-based one (tolerance %g%%)%s",
                   names(ratio)[worst], ratio[worst], 100 * rtol,
                   if (lme4::isSingular(m, tol = 1e-4)) " at a boundary (singular) fit" else "")
  } else {
    why <- "the finite-difference Hessian of the deviance is not positive definite"
  }
  m@optinfo$derivs$Hessian <- NULL
  out$model <- m
  out$unstable <- TRUE
  out$message <- paste0("unstable covariance of the fixed effects: ", why, "; the standard errors, tests and ",
                        "intervals use the RX-based covariance (lme4's vcov(m, use.hessian = FALSE)), not ",
                        "R's default summary(m)")
  out
}

# A column name for the weights that is not a column of `data`.
me_weights_name <- function(data) {
  w <- ".mixedeval_weights"
  while (w %in% names(data)) w <- paste0(w, "_")
  w
}

# Fit one GLMM. `weights` (numeric vector or NULL) becomes a column of the local copy of `data`
# referred to by name in the call; `contrasts` a named list of contrast names or NULL.
me_glmm_fit <- function(formula, data, family = "binomial", link = NULL, nagq = 1L, optimizer = NULL,
                        weights = NULL, calc_derivs = TRUE, contrasts = NULL) {
  f <- stats::as.formula(formula)
  nAGQ <- as.integer(nagq)
  ctrl <- me_glmm_control(optimizer, calc_derivs)
  w_arg <- NULL
  if (!is.null(weights)) {
    wname <- me_weights_name(data)
    data[[wname]] <- as.numeric(weights)
    w_arg <- as.name(wname)
  }
  if (family %in% c("beta", "betabinomial")) {
    fam <- me_glmm_family(family, link)
    cl <- bquote(glmmTMB::glmmTMB(f, data = data, family = fam, weights = .(w_arg), contrasts = contrasts))
  } else if (family == "negative_binomial") {
    cl <- bquote(lme4::glmer.nb(f, data = data, nAGQ = nAGQ, control = ctrl, weights = .(w_arg),
                                contrasts = contrasts))
  } else {
    fam <- me_glmm_family(family, link)
    cl <- bquote(lme4::glmer(f, data = data, family = fam, nAGQ = nAGQ, control = ctrl, weights = .(w_arg),
                             contrasts = contrasts))
  }
  if (is.null(w_arg)) cl$weights <- NULL
  if (is.null(contrasts)) cl$contrasts <- NULL
  eval(cl)
}

me_is_tmb <- function(m) inherits(m, "glmmTMB")

# glmmTMB fits are S3 lists, which the Python side would convert element by element: they travel
# as an environment holding `model` (lme4's S4 fits travel as they are). Every helper receiving
# a GLMM unwraps it with me_glmm_model().
me_glmm_handle <- function(m) {
  if (!me_is_tmb(m)) return(m)
  h <- new.env(parent = emptyenv())
  h$model <- m
  h
}

me_glmm_model <- function(m) if (is.environment(m)) m$model else m

# Convergence: lme4's checks (gradient, Hessian) and optimizer messages; for glmmTMB the
# optimizer's code and the positive-definiteness of the Hessian (sdr$pdHess).
me_glmm_convergence <- function(m) {
  if (me_is_tmb(m)) {
    code <- m$fit$convergence
    msgs <- character(0)
    if (!isTRUE(code == 0)) msgs <- c(msgs, paste("glmmTMB optimizer:", m$fit$message))
    if (!isTRUE(m$sdr$pdHess)) {
      msgs <- c(msgs, "Model convergence problem; non-positive-definite Hessian matrix (glmmTMB sdr$pdHess is FALSE)")
    }
    return(list(converged = length(msgs) == 0L, optimizer_code = as.integer(code), messages = msgs,
                kinds = rep("hessian", length(msgs))))
  }
  oi <- m@optinfo
  lme4_msgs <- oi$conv$lme4$messages
  msgs <- c(lme4_msgs, oi$warnings)
  msgs <- vapply(msgs, function(x) paste(as.character(x), collapse = " "), character(1))
  code <- oi$conv$opt
  if (is.null(code)) code <- 0L
  list(converged = (length(msgs) == 0L) && isTRUE(code == 0), optimizer_code = as.integer(code),
       messages = unname(as.character(msgs)))
}

# summary(m)$coefficients (conditional model for glmmTMB) with the Wald interval
# estimate -+ qnorm(1 - (1 - level) / 2) * SE as lower / upper.
me_glmm_fixed_table <- function(m, level = 0.95) {
  cf <- summary(m)$coefficients
  if (me_is_tmb(m)) cf <- cf$cond
  tab <- data.frame(term = rownames(cf), Estimate = unname(cf[, 1]), SE = unname(cf[, 2]),
                    z = unname(cf[, 3]), p = unname(cf[, 4]), stringsAsFactors = FALSE)
  names(tab) <- c("term", "Estimate", "Std. Error", "z value", "Pr(>|z|)")
  q <- stats::qnorm(1 - (1 - level) / 2)
  tab$lower <- tab[["Estimate"]] - q * tab[["Std. Error"]]
  tab$upper <- tab[["Estimate"]] + q * tab[["Std. Error"]]
  tab
}

me_glmm_random_table <- function(m) {
  vc <- if (me_is_tmb(m)) glmmTMB::VarCorr(m)$cond else lme4::VarCorr(m)
  if (me_is_tmb(m)) {
    rows <- list()
    for (g in names(vc)) {
      s <- vc[[g]]
      nm <- colnames(s)
      for (i in seq_along(nm)) {
        rows[[length(rows) + 1L]] <- data.frame(grp = g, var1 = nm[i], var2 = NA_character_, vcov = s[i, i],
                                                sdcor = sqrt(s[i, i]), stringsAsFactors = FALSE)
      }
      if (length(nm) > 1L) {
        cr <- attr(s, "correlation")
        for (j in 1:(length(nm) - 1L)) for (i in (j + 1L):length(nm)) {
          rows[[length(rows) + 1L]] <- data.frame(grp = g, var1 = nm[j], var2 = nm[i], vcov = s[i, j],
                                                  sdcor = cr[i, j], stringsAsFactors = FALSE)
        }
      }
    }
    return(do.call(rbind, rows))
  }
  vc <- as.data.frame(vc, order = "lower.tri")
  data.frame(grp = as.character(vc$grp), var1 = as.character(vc$var1), var2 = as.character(vc$var2),
             vcov = vc$vcov, sdcor = vc$sdcor, stringsAsFactors = FALSE)
}

# Dispersion parameters: theta of the negative binomial (lme4's getME(m, "glmer.nb.theta")),
# phi of glmmTMB's beta / beta-binomial (sigma(m)).
me_glmm_dispersion <- function(m, family) {
  if (family == "negative_binomial") return(list(name = "theta", value = lme4::getME(m, "glmer.nb.theta")))
  if (family %in% c("beta", "betabinomial")) return(list(name = "phi", value = stats::sigma(m)))
  list(name = character(0), value = numeric(0))
}

me_glmm_summary <- function(m, family, level = 0.95) {
  ll <- stats::logLik(m)
  tmb <- me_is_tmb(m)
  ng <- if (tmb) vapply(m$modelInfo$reTrms$cond$flist, nlevels, integer(1)) else lme4::ngrps(m)
  fam <- stats::family(m)
  list(
    fixed = me_glmm_fixed_table(m, level),
    random = me_glmm_random_table(m),
    loglik = as.numeric(ll),
    df_loglik = as.integer(attr(ll, "df")),
    aic = stats::AIC(m),
    bic = stats::BIC(m),
    deviance = if (tmb) -2 * as.numeric(ll) else stats::deviance(m),
    nobs = as.integer(stats::nobs(m)),
    ngroups_names = names(ng),
    ngroups = as.integer(ng),
    singular = if (tmb) me_tmb_singular(m) else lme4::isSingular(m, tol = 1e-4),
    convergence = me_glmm_convergence(m),
    link = fam$link,
    dispersion = me_glmm_dispersion(m, family),
    response = deparse(stats::formula(m)[[2]])
  )
}

# glmmTMB has no isSingular; the analogue of lme4's rule (a relative Cholesky diagonal below
# 1e-4): a random-effect SD of the conditional model below 1e-4 on the link scale, or a
# correlation within 1e-6 of +-1.
me_tmb_singular <- function(m) {
  vc <- glmmTMB::VarCorr(m)$cond
  any(vapply(vc, function(s) any(sqrt(diag(s)) < 1e-4) ||
    (ncol(s) > 1L && any(abs(attr(s, "correlation")[lower.tri(s)]) > 1 - 1e-6)), logical(1)))
}

me_glmm_fit_and_summarise <- function(formula, data, family = "binomial", link = NULL, nagq = 1L,
                                      optimizer = NULL, weights = NULL, level = 0.95, calc_derivs = TRUE) {
  m <- me_glmm_fit(formula, data, family, link, nagq, optimizer, weights, calc_derivs)
  chk <- me_glmm_vcov_check(m)
  m <- chk$model
  c(list(model = me_glmm_handle(m), vcov_unstable = chk$unstable, vcov_message = chk$message),
    me_glmm_summary(m, family, level))
}

me_glmm_fixed <- function(m, level = 0.95) me_glmm_fixed_table(me_glmm_model(m), level)

# The factors of the fixed part of `formula` among the columns of `data`.
me_glmm_fixed_factors <- function(formula, data) {
  fx <- lme4::nobars(stats::as.formula(formula))
  vars <- all.vars(fx[[length(fx)]])
  vars[vapply(vars, function(v) v %in% names(data) && (is.factor(data[[v]]) || is.character(data[[v]])),
              logical(1))]
}

# Type III Wald chi-square tests, car::Anova(m, type = 3), on the model refitted with
# sum-to-zero contrasts (contr.sum) for every factor of the fixed part, so that each main-effect
# test is averaged over the levels of the factors it interacts with (with treatment contrasts it
# would test the effect at the reference level). The refit is the same model (same likelihood,
# same fitted values), only reparametrised.
me_glmm_anova <- function(formula, data, family = "binomial", link = NULL, nagq = 1L, optimizer = NULL,
                          weights = NULL) {
  facs <- me_glmm_fixed_factors(formula, data)
  ctr <- if (length(facs)) stats::setNames(rep(list("contr.sum"), length(facs)), facs) else NULL
  m <- me_glmm_vcov_check(me_glmm_fit(formula, data, family, link, nagq, optimizer, weights, TRUE, ctr))$model
  a <- if (me_is_tmb(m)) car::Anova(m, type = 3, component = "cond") else car::Anova(m, type = 3)
  tab <- as.data.frame(a)
  class(tab) <- "data.frame"
  attr(tab, "heading") <- NULL
  tab <- cbind(data.frame(term = rownames(a), stringsAsFactors = FALSE), tab)
  rownames(tab) <- NULL
  list(table = tab, sum_contrasts = facs, loglik = as.numeric(stats::logLik(m)))
}

# Likelihood-ratio tests between nested GLMMs: lme4's anova(m0, m1, ...) for glmer fits (all
# ML, no refit), glmmTMB's anova for glmmTMB fits; plus the 50:50 mixture p-value of consecutive
# rows (lme4 fits whose random effects differ by one variance: me_lrt_mixture).
me_glmm_compare <- function(models, model_names, mixture = FALSE) {
  models <- lapply(models, me_glmm_model)
  a <- do.call(stats::anova, c(unname(models), list(model.names = model_names)))
  tab <- as.data.frame(a)
  class(tab) <- "data.frame"
  attr(tab, "heading") <- NULL
  rn <- rownames(a)
  if (!all(rn %in% model_names)) {
    # glmmTMB's anova labels rows by the models' call names; lme4 by model.names
    ll <- vapply(models, function(m) as.numeric(stats::logLik(m)), numeric(1))
    np <- vapply(models, function(m) attr(stats::logLik(m), "df"), numeric(1))
    rn <- model_names[order(np, -ll)]
  }
  ord <- match(rn, model_names)
  tab <- cbind(data.frame(model = rn, stringsAsFactors = FALSE), tab)
  rownames(tab) <- NULL
  pmix <- rep(NA_real_, nrow(tab))
  if (isTRUE(mixture) && nrow(tab) > 1L && !any(vapply(models, me_is_tmb, logical(1)))) {
    chisq <- tab[["Chisq"]]
    df <- tab[[if ("Chi Df" %in% names(tab)) "Chi Df" else "Df"]]
    for (i in 2:nrow(tab)) pmix[i] <- me_lrt_mixture(models[[ord[i - 1L]]], models[[ord[i]]], chisq[i], df[i])
  }
  list(table = tab, p_mixture = pmix)
}

# Do the models share the fixed-effect design and the response (lme4 fits: getME; glmmTMB:
# the model frame's response and the conditional model matrix)?
me_glmm_compare_check <- function(models) {
  models <- lapply(models, me_glmm_model)
  X <- lapply(models, function(m) if (me_is_tmb(m)) m$obj$env$data$X else as.matrix(lme4::getME(m, "X")))
  y <- lapply(models, function(m) as.numeric(as.matrix(stats::model.response(stats::model.frame(m)))))
  same_x <- vapply(X, function(x) identical(dim(x), dim(X[[1]])) && isTRUE(all(x == X[[1]])), logical(1))
  same_y <- vapply(y, function(v) length(v) == length(y[[1]]) && isTRUE(all(v == y[[1]])), logical(1))
  list(fixed_equal = all(same_x), response_equal = all(same_y))
}

# Estimated marginal means of a GLMM (emmeans::emmeans, or emtrends with `var`), summarised on
# the link or the response scale (`type`); df are asymptotic (Inf). For emtrends, `type =
# "response"` differentiates the response-scale mean (emtrends(..., regrid = "response")).
# `marginal` (means only): "none" back-transforms the link-scale means with the random effects at
# zero (conditional: a typical group); "bias_adj" stores emmeans' second-order bias adjustment in
# the grid (update(grid, bias.adjust = TRUE, sigma = sigma): the same numbers as emmeans(...,
# type = "response", bias.adj = TRUE, sigma = sigma); Lenth's "transformations" vignette, cbpp
# example) and also returns the exact integral (`integrated`) to measure the approximation;
# "integrate" replaces the grid's inverse link by its exact average over N(0, sigma^2) random
# effects (me_glmm_integrated_link), so summary / regrid / contrast give population-averaged
# means, delta-method SEs and back-transformed intervals. `sigma`: the SD of the random effects.
me_glmm_emmeans <- function(m, specs, by = NULL, at = NULL, var = NULL, level = 0.95, type = "response",
                            marginal = "none", sigma = NULL) {
  m <- me_glmm_model(m)
  # glmmTMB's emmeans support uses residual df; mixedeval's GLMM inference is asymptotic (z), as
  # summary(m) and lme4's fits are: df = Inf
  extra <- if (me_is_tmb(m)) list(df = Inf) else list()
  args <- c(list(m, specs = specs, by = by, at = at), extra)
  grid <- if (is.null(var)) {
    do.call(emmeans::emmeans, args)
  } else if (type == "response") {
    do.call(emmeans::emtrends, c(args, list(var = var, regrid = "response")))
  } else {
    do.call(emmeans::emtrends, c(args, list(var = var)))
  }
  integrated <- NULL
  if (is.null(var) && !identical(marginal, "none")) {
    ig <- me_glmm_marginal_grid(grid, "integrate", sigma)
    integrated <- as.numeric(summary(ig, type = "response")[[attr(summary(ig, type = "response"), "estName")]])
    grid <- if (identical(marginal, "integrate")) ig else me_glmm_marginal_grid(grid, marginal, sigma)
  }
  c(list(grid = grid, integrated = integrated), me_glmm_emm_summary(grid, c(TRUE, FALSE), level, type))
}

# The inverse link averaged over a N(0, sigma^2) random effect: h(eta) = E[linkinv(eta + sigma Z)]
# and its derivative E[mu.eta(eta + sigma Z)] (used by emmeans for delta-method SEs), computed with
# the trapezoidal rule on z in [-(10 + sigma), 10 + sigma], step 0.02, weights dnorm(z) normalised
# to sum 1. For a Gaussian-weighted integrand that is analytic in a strip (the logistic's poles sit
# at distance pi / sigma from the real z axis) the trapezoidal rule converges geometrically
# (Trefethen & Weideman 2014, SIAM Review 56:385); Gauss-Hermite with 64 nodes is only accurate to
# ~3e-5 at sigma = 3. `link`: a stats::make.link name.
me_glmm_integrated_link <- function(link, sigma) {
  base <- stats::make.link(link)
  h <- 0.02
  z <- seq(-(10 + sigma), 10 + sigma, by = h)
  w <- stats::dnorm(z)
  w <- w / sum(w)
  inv <- function(eta) vapply(eta, function(e) sum(w * base$linkinv(e + sigma * z)), numeric(1))
  der <- function(eta) vapply(eta, function(e) sum(w * base$mu.eta(e + sigma * z)), numeric(1))
  fun <- function(mu) vapply(mu, function(p) {
    if (!is.finite(p)) return(NA_real_)
    f <- function(e) inv(e) - p
    tryCatch(stats::uniroot(f, c(-50, 50), tol = 1e-12, extendInt = "yes")$root, error = function(e) NA_real_)
  }, numeric(1))
  list(linkfun = fun, linkinv = inv, mu.eta = der, valideta = function(eta) TRUE,
       name = sprintf("%s (inverse link averaged over random effects with SD %.5g)", link, sigma))
}

# A grid whose response scale is population-averaged: "bias_adj" (emmeans' second-order bias
# adjustment stored in misc) or "integrate" (the integrated inverse link as the grid's tran). The
# grid's own link is kept in misc$me_link so ratio contrasts stay conditional (me_glmm_contrast).
me_glmm_marginal_grid <- function(grid, marginal, sigma) {
  link <- grid@misc$tran
  if (!is.character(link) || length(link) != 1L) stop("population-averaged means need a standard link function")
  out <- if (identical(marginal, "bias_adj")) {
    stats::update(grid, bias.adjust = TRUE, sigma = sigma)
  } else if (identical(marginal, "integrate")) {
    stats::update(grid, tran = me_glmm_integrated_link(link, sigma))
  } else stop(sprintf("unknown marginal mode '%s'", marginal))
  out@misc$me_link <- link
  out@misc$me_marginal <- marginal
  out@misc$me_sigma <- sigma
  out
}

# The conditional grid behind a marginal one (its own link, no bias adjustment).
me_glmm_conditional_grid <- function(grid) {
  if (is.null(grid@misc$me_marginal)) return(grid)
  grid@misc$tran <- grid@misc$me_link
  grid@misc$bias.adjust <- NULL
  grid@misc$sigma <- NULL
  for (k in c("me_link", "me_marginal", "me_sigma")) grid@misc[[k]] <- NULL
  grid
}

me_glmm_emm_summary <- function(grid, infer, level, type, adjust = NULL) {
  s <- if (is.null(adjust)) summary(grid, infer = infer, level = level, type = type)
       else summary(grid, infer = infer, level = level, type = type, adjust = adjust)
  mesg <- attr(s, "mesg")
  pri <- attr(s, "pri.vars")
  by_vars <- attr(s, "by.vars")
  est_name <- attr(s, "estName")
  table <- as.data.frame(s, stringsAsFactors = FALSE)
  class(table) <- "data.frame"
  for (a in setdiff(names(attributes(table)), c("names", "row.names", "class"))) attr(table, a) <- NULL
  if ("contrast" %in% names(table)) table$contrast <- as.character(table$contrast)
  list(table = table, mesg = if (is.null(mesg)) character(0) else as.character(mesg),
       est_name = as.character(est_name),
       pri_vars = if (is.null(pri)) character(0) else as.character(pri),
       by_vars = if (is.null(by_vars)) character(0) else as.character(by_vars))
}

# Contrasts of GLMM means. scale = "ratio": contrasts of the link-scale means, summarised with
# `type` (on the response scale of a logit / log link: odds ratios / rate ratios, tests on the
# log scale); scale = "difference": contrasts of the regridded response-scale means
# (emmeans::regrid: risk / rate differences, delta-method SEs). p_raw: the same contrasts
# summarised with adjust = "none". `seed` is set right before the adjusted summary (mvt).
# Grids from me_glmm_marginal_grid: differences are regridded from the population-averaged means
# (regrid(bias.adjust = TRUE, sigma) for "bias_adj"; the integrated link for "integrate"), i.e.
# marginal risk differences; ratios are always contrasts of the conditional link-scale means
# (odds ratios for a typical group: a population-averaged odds ratio is not a contrast of them).
me_glmm_contrast <- function(grid, method, adjust, level = 0.95, by = NULL, use_grid_by = TRUE, ref = NULL,
                             seed = NULL, type = "response", scale = "ratio") {
  grid <- if (!identical(scale, "difference")) {
    me_glmm_conditional_grid(grid)
  } else if (identical(grid@misc$me_marginal, "bias_adj")) {
    emmeans::regrid(grid, transform = "response", bias.adjust = TRUE, sigma = grid@misc$me_sigma)
  } else {
    emmeans::regrid(grid, transform = "response")
  }
  if (is.list(method)) method <- lapply(method, as.numeric)
  args <- list(method = method)
  if (!use_grid_by) args["by"] <- list(by)
  if (!is.null(ref)) {
    if (is.character(ref)) {
      labs <- me_emm_levels(grid, if (use_grid_by) grid@misc$by.vars else by)
      idx <- match(ref, labs)
      if (anyNA(idx)) stop(sprintf("reference level(s) %s not found; the levels are: %s",
                                   paste(ref[is.na(idx)], collapse = ", "), paste(labs, collapse = ", ")))
      ref <- idx
    }
    args$ref <- as.integer(ref)
  }
  ct <- do.call(emmeans::contrast, c(list(grid), args, list(adjust = adjust)))
  raw <- me_glmm_emm_summary(ct, c(TRUE, TRUE), level, type, adjust = "none")
  if (!is.null(seed)) set.seed(seed)
  c(list(grid = ct, p_raw = as.numeric(raw$table[["p.value"]])),
    me_glmm_emm_summary(ct, c(TRUE, TRUE), level, type))
}

# What check_optimizers compares for a GLMM: log-likelihood, convergence, fixed effects (Wald z),
# variance components.
me_glmm_optimizer_summary <- function(m) {
  m <- me_glmm_model(m)
  list(loglik = as.numeric(stats::logLik(m)),
       convergence = me_glmm_convergence(m),
       singular = if (me_is_tmb(m)) me_tmb_singular(m) else lme4::isSingular(m, tol = 1e-4),
       feval = as.integer(if (me_is_tmb(m) || is.null(m@optinfo$feval)) NA_integer_ else m@optinfo$feval),
       fixed = me_glmm_fixed_table(m),
       random = me_glmm_random_table(m))
}

# The same GLMM refitted with another optimizer and/or nAGQ, summarised.
me_glmm_check_optimizer <- function(formula, data, family = "binomial", link = NULL, nagq = 1L,
                                    optimizer = NULL, weights = NULL, calc_derivs = TRUE) {
  me_glmm_optimizer_summary(me_glmm_fit(formula, data, family, link, nagq, optimizer, weights, calc_derivs))
}
