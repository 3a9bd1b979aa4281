# Power by simulation from a mixed model (mixedeval's me.power, issue 16), in the manner of simr's
# powerSim: responses are drawn by lme4's simulate() from a model whose parameters are set
# (newparams = list(beta, theta, sigma)), the analysis model is refitted to each response with
# lme4::refit(), and the test of one fixed-effect term gives a p-value.
#
# me_power_setup() builds the state once (the template models on the design's data);
# me_power_batch() runs a batch of simulations, one per seed (set.seed(seed_i) before drawing
# response i, so a simulation's result depends on its own seed only, never on the batch size), and
# returns one vector per quantity; me_power_responses() returns the simulated responses themselves
# (for the paired resampling tests, which run in numpy).

# The fixed-effect formula without `term`, the random-effect bars kept: built on the formula's
# language objects (lme4::nobars / findbars, stats::drop.terms), never by pasting text.
me_power_null_formula <- function(f, term) {
  fixed <- lme4::nobars(f)
  tt <- stats::terms(fixed)
  labels <- attr(tt, "term.labels")
  idx <- match(term, labels)
  if (is.na(idx)) stop(sprintf("the term '%s' is not a fixed-effect term of the model (terms: %s)",
                               term, paste(labels, collapse = ", ")))
  other <- labels[-idx]
  if (any(vapply(strsplit(other, ":", fixed = TRUE), function(p) term %in% p, logical(1)))) {
    stop(sprintf("the term '%s' is part of an interaction; its likelihood-ratio test is not defined here", term))
  }
  rhs <- if (length(labels) == 1L) {
    if (attr(tt, "intercept") == 1L) 1 else 0
  } else {
    stats::formula(stats::drop.terms(tt, idx, keep.response = TRUE))[[3L]]
  }
  for (b in lme4::findbars(f)) rhs <- call("+", rhs, call("(", b))
  out <- f
  out[[3L]] <- rhs
  out
}

me_power_family <- function(family) {
  switch(family, gaussian = stats::gaussian(), binomial = stats::binomial(),
         stop(sprintf("family '%s' is not supported (gaussian or binomial)", family)))
}

# Parameters of a fitted pilot model: fixed effects, theta and sigma, each named as lme4 names them.
me_power_pilot <- function(m) {
  list(beta = lme4::fixef(m), theta = lme4::getME(m, "theta"), sigma = stats::sigma(m))
}

# theta from variances per grouping factor (random intercepts): the relative covariance factor
# sd / sigma of a linear mixed model, the standard deviation itself for a GLMM (lme4's scaling).
me_power_theta <- function(variances, sigma, family) {
  sds <- sqrt(unlist(variances))
  if (family == "gaussian") sds <- sds / sigma
  stats::setNames(sds, paste0(names(variances), ".(Intercept)"))
}

# lme4's default controls (lmer: nloptwrap; glmer: its two-stage optimizer, bobyqa for the nAGQ = 0
# stage and Nelder-Mead for the Laplace stage), as me.fit and me.glmm fit (issue 33: the binomial
# fits used to be bobyqa-only, a different call from the analysis); a singular fit is reported by
# the simulation's own column, not warned.
me_power_control <- function(family) {
  if (family == "gaussian") {
    lme4::lmerControl(check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4))
  } else {
    me_glmm_control()
  }
}

me_power_fit <- function(f, data, family, reml) {
  ctrl <- me_power_control(family)
  if (family == "gaussian") lme4::lmer(f, data = data, REML = reml, control = ctrl)
  else lme4::glmer(f, data = data, family = me_power_family(family), control = ctrl)
}

# The state of a power simulation.
#   formula, data: the analysis model and the design (the response column holds placeholder values);
#   beta: fixed effects (named as lme4 names them, or in the model's order); theta: named (lme4's
#   names), or NULL with `variances` (one variance per grouping factor, random intercepts only);
#   term, effect: the coefficients of `term` are set to `effect` (one value per coefficient);
#   test: "lrt" (ML refits of the model with and without `term`, chi-square on the difference in
#   parameters), "Satterthwaite" / "Kenward-Roger" (REML refit, lmerTest::contest of the term's
#   coefficients, an F test that equals the t test for one coefficient), "wald_z" (binomial GLMM
#   refitted by lme4::glmer, Wald z test of the term's one coefficient), or "none" (responses only).
# The template models are fitted once to one response simulated with set.seed(template_seed),
# so that every refit starts from sensible values.
me_power_setup <- function(formula, data, beta, theta = NULL, sigma = 1, variances = NULL, family = "gaussian",
                           term = "system", effect = 0, test = "lrt", template_seed = 1L) {
  f <- stats::as.formula(formula)
  fam <- me_power_family(family)
  beta <- unlist(beta)  # named lists arrive from Python; named numeric vectors from here on
  if (!is.null(theta)) theta <- unlist(theta)
  if (is.null(theta)) theta <- me_power_theta(variances, sigma, family)
  rhs <- f[-2L]
  X <- lme4::lFormula(f, data = data, control = lme4::lmerControl(check.nobs.vs.nlev = "ignore",
                      check.nobs.vs.nRE = "ignore"))$X
  coef_names <- colnames(X)
  if (!is.null(names(beta)) && all(nzchar(names(beta)))) {
    if (!setequal(names(beta), coef_names)) {
      stop(sprintf("the fixed effects given (%s) do not match the model's (%s)",
                   paste(names(beta), collapse = ", "), paste(coef_names, collapse = ", ")))
    }
    beta <- beta[coef_names]
  } else {
    if (length(beta) != length(coef_names)) stop("beta has the wrong length for the model's fixed effects")
    names(beta) <- coef_names
  }
  labels <- attr(stats::terms(lme4::nobars(f)), "term.labels")
  k <- match(term, labels)
  if (is.na(k)) stop(sprintf("the term '%s' is not a fixed-effect term of the model (terms: %s)",
                             term, paste(labels, collapse = ", ")))
  idx <- which(attr(X, "assign") == k)
  if (length(effect) == 1L && length(idx) > 1L) effect <- rep(effect, length(idx))
  if (length(effect) != length(idx)) {
    stop(sprintf("the term '%s' has %d coefficients (%s); give one effect per coefficient", term, length(idx),
                 paste(coef_names[idx], collapse = ", ")))
  }
  if (test == "wald_z" && length(idx) != 1L) stop("the Wald z test needs a term with one coefficient (two systems)")
  beta[idx] <- effect
  params <- list(beta = beta, theta = theta)
  if (family == "gaussian") params$sigma <- sigma
  y0 <- stats::simulate(rhs, newdata = data, newparams = params, family = fam, seed = template_seed)[[1L]]
  resp <- all.vars(f[[2L]])
  if (length(resp) != 1L || !identical(f[[2L]], as.name(resp))) {
    stop("the response of a power simulation must be a data column (compute a transformed response as a column first)")
  }
  d <- data
  d[[resp]] <- y0
  reml <- test %in% c("Satterthwaite", "Kenward-Roger")
  m1 <- suppressWarnings(suppressMessages(me_power_fit(f, d, family, reml)))
  state <- new.env()
  state$f <- f
  state$data <- d
  state$response <- resp
  state$m1 <- m1
  state$params <- params
  state$test <- test
  state$coef <- coef_names[idx]
  state$L <- diag(length(coef_names))[idx, , drop = FALSE]
  if (test == "lrt") {
    f0 <- me_power_null_formula(f, term)
    state$m0 <- suppressWarnings(suppressMessages(lme4::refit(me_power_fit(f0, d, family, FALSE), newresp = y0)))
    state$df <- length(lme4::fixef(m1)) - length(lme4::fixef(state$m0))
    state$null_formula <- paste(deparse(f0, width.cutoff = 500L), collapse = " ")
  }
  state$nobs <- nrow(data)
  state$beta <- beta
  state$theta <- theta
  state
}

# One simulated response: set.seed(seed), then lme4's simulate() from the template with the
# design's parameters.
me_power_draw <- function(state, seed) {
  stats::simulate(state$m1, nsim = 1L, seed = seed, newparams = state$params)[[1L]]
}

me_power_responses <- function(state, seeds) {
  vapply(seeds, function(s) as.numeric(me_power_draw(state, s)), numeric(state$nobs))
}

# The test of one simulated response: estimate (first coefficient of the term), statistic (chisq
# or F), its denominator df (NA for the likelihood-ratio test), p-value, singular.
me_power_one <- function(state, y) {
  if (state$test == "lrt") {
    r1 <- lme4::refit(state$m1, newresp = y)
    r0 <- lme4::refit(state$m0, newresp = y)
    stat <- as.numeric(2 * (stats::logLik(r1) - stats::logLik(r0)))
    p <- stats::pchisq(stat, state$df, lower.tail = FALSE)
    ddf <- NA_real_
  } else if (state$test == "wald_z") {
    # the GLMM's Wald z test of the coefficient as me.glmm computes it: a fresh glmer fit with
    # me.glmm's call (me_glmm_fit: Laplace, glmer's default two-stage optimizer, derivatives) and its
    # covariance rule (me_glmm_vcov_check: the RX-based covariance when the Hessian is not to be
    # trusted), then summary()$coefficients; a refit from the template's estimates would stop
    # elsewhere within the optimizer's tolerance
    d <- state$data
    d[[state$response]] <- y
    r1 <- me_glmm_vcov_check(me_glmm_fit(state$f, d, "binomial"))$model
    cf <- stats::coef(summary(r1))
    stat <- unname(cf[state$coef[1L], "z value"])
    p <- 2 * stats::pnorm(-abs(stat))
    ddf <- NA_real_
  } else {
    # a fresh lmerTest::lmer fit, as the analyst runs it (lmerTest's derivatives need the data
    # holding this response; lme4::refit would leave them on the template's response)
    d <- state$data
    d[[state$response]] <- y
    r1 <- lmerTest::lmer(state$f, data = d, REML = TRUE, control = me_power_control("gaussian"))
    ct <- lmerTest::contest(r1, state$L, joint = TRUE, ddf = state$test)
    stat <- ct[["F value"]]
    ddf <- ct[["DenDF"]]
    p <- ct[["Pr(>F)"]]
  }
  c(estimate = unname(lme4::fixef(r1)[state$coef[1L]]), statistic = stat, ddf = ddf, p_value = p,
    singular = as.numeric(lme4::isSingular(r1, tol = 1e-4)))
}

# A batch of simulations, one per seed; a simulation whose refit fails has NA values and its error
# message, warnings are kept per simulation (they do not stop the batch).
me_power_batch <- function(state, seeds) {
  n <- length(seeds)
  out <- matrix(NA_real_, nrow = n, ncol = 5L,
                dimnames = list(NULL, c("estimate", "statistic", "ddf", "p_value", "singular")))
  problem <- character(n)
  for (i in seq_len(n)) {
    y <- me_power_draw(state, seeds[i])
    step <- me_collect(function() me_power_one(state, y))
    notes <- step$warnings
    r <- step$value
    if (!is.null(step$error)) {
      problem[i] <- paste("error:", step$error)
      next
    }
    out[i, ] <- r
    problem[i] <- paste(unique(notes), collapse = "; ")
  }
  list(estimate = as.numeric(out[, 1L]), statistic = as.numeric(out[, 2L]), ddf = as.numeric(out[, 3L]),
       p_value = as.numeric(out[, 4L]), singular = as.logical(out[, 5L] == 1), problem = problem)
}

# What the state holds, for the result's provenance: the coefficients tested, the parameters,
# the null model (likelihood-ratio test) and its difference in parameters.
me_power_info <- function(state) {
  list(coef = state$coef, beta = state$beta, theta = state$theta,
       sigma = if (is.null(state$params$sigma)) NA_real_ else state$params$sigma,
       df = if (is.null(state$df)) NA_integer_ else as.integer(state$df),
       null_formula = if (is.null(state$null_formula)) NA_character_ else state$null_formula)
}
