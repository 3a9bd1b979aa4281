# Independent R implementation of DHARMa 0.4.7's residual rule and tests, for mixedeval's tests.
# DHARMa itself is not installable here (not packaged for Debian bookworm, no CRAN access), so
# these functions restate its published algorithm in plain R on top of R's own ks.test,
# binom.test, p.adjust and car::leveneTest. Random draws are passed in, so the results are
# deterministic and comparable with the numpy implementation on the same inputs.
# `alternative` is accepted in mixedeval's spelling ("two-sided") or R's ("two.sided").

# mixedeval's "two-sided" is R's "two.sided"; the other two are spelled alike
dharma_ref_alternative <- function(alternative) {
  if (identical(alternative, "two-sided")) "two.sided" else alternative
}

# PIT residuals (getQuantile, method = "PIT"): u replaces runif(n) in
# runif(length(lower), lower, lowerOrEqual) = lower + (lowerOrEqual - lower) * u
dharma_ref_pit <- function(simulations, observed, u) {
  lower <- unname(rowMeans(simulations < observed))
  lowerOrEqual <- unname(rowMeans(simulations <= observed))
  needs <- lower != lowerOrEqual
  ifelse(needs, lower + (lowerOrEqual - lower) * u, lower)
}

# getP
dharma_ref_getP <- function(simulated, observed, alternative) {
  if (alternative == "greater") return(mean(simulated >= observed))
  if (alternative == "less") return(mean(simulated <= observed))
  min(min(mean(simulated <= observed), mean(simulated >= observed)) * 2, 1)
}

# testGeneric
dharma_ref_generic <- function(simulations, observed, summary, alternative = "two.sided") {
  obs <- summary(observed)
  sim <- apply(simulations, 2, summary)
  list(statistic = obs / mean(sim), p.value = dharma_ref_getP(sim, obs, alternative),
       observed = obs, simulated = sim)
}

# testDispersion(type = "DHARMa"), refit = FALSE
dharma_ref_dispersion <- function(simulations, observed, predicted, alternative = "two.sided") {
  expectedVar <- sd(simulations)^2
  spread <- function(x) var(x - predicted) / expectedVar
  dharma_ref_generic(simulations, observed, spread, alternative)
}

# testOutliers(type = "binomial")
dharma_ref_outliers_binomial <- function(res, nSim, alternative = "two.sided", margin = "both") {
  lo <- sum(res < (1 / (nSim + 1)))
  hi <- sum(res > (1 - 1 / (nSim + 1)))
  outliers <- switch(margin, both = lo + hi, upper = hi, lower = lo)
  p0 <- 1 / (nSim + 1) * ifelse(margin == "both", 2, 1)
  bt <- binom.test(outliers, length(res), p = p0, alternative = dharma_ref_alternative(alternative))
  list(statistic = outliers, p.value = bt$p.value)
}

# testOutliers(type = "bootstrap"): sel is an nBoot x nSim matrix of 1-based column indices,
# u an nBoot x nObs matrix of uniforms for the PIT ties
dharma_ref_outliers_bootstrap <- function(simulations, res, sel, u, alternative = "two.sided") {
  nBoot <- nrow(sel)
  frequBoot <- rep(NA, nBoot)
  for (i in 1:nBoot) {
    r <- dharma_ref_pit(simulations[, sel[i, ]], simulations[, i], u[i, ])
    frequBoot[i] <- mean(r == 1) + mean(r == 0)
  }
  outliers <- mean(res == 0) + mean(res == 1)
  list(statistic = outliers * length(res), p.value = dharma_ref_getP(frequBoot, outliers, alternative),
       frequBoot = frequBoot)
}

# testCategorical
dharma_ref_categorical <- function(res, catPred) {
  catPred <- as.factor(catPred)
  details <- suppressWarnings(by(res, catPred, ks.test, "punif", simplify = TRUE))
  p <- sapply(seq_len(nlevels(catPred)), function(i) details[[i]]$p.value)
  d <- sapply(seq_len(nlevels(catPred)), function(i) unname(details[[i]]$statistic))
  lev <- car::leveneTest(res, catPred, center = median)
  list(levels = levels(catPred), statistic = d, p.value = p, p.adj = p.adjust(p),
       levene.F = lev[1, "F value"], levene.p = lev[1, "Pr(>F)"],
       levene.df = c(lev[1, "Df"], lev[2, "Df"]))
}

# D'Agostino-Pearson K^2 (D'Agostino, Belanger & D'Agostino 1990), to check scipy's normaltest
dharma_ref_dagostino <- function(x) {
  n <- length(x)
  m <- mean(x)
  m2 <- mean((x - m)^2); m3 <- mean((x - m)^3); m4 <- mean((x - m)^4)
  b1 <- m3 / m2^1.5
  y <- b1 * sqrt((n + 1) * (n + 3) / (6 * (n - 2)))
  beta2 <- 3 * (n^2 + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2) * (n + 5) * (n + 7) * (n + 9))
  W2 <- -1 + sqrt(2 * (beta2 - 1))
  delta <- 1 / sqrt(log(sqrt(W2)))
  alpha <- sqrt(2 / (W2 - 1))
  Z1 <- delta * log(y / alpha + sqrt((y / alpha)^2 + 1))
  b2 <- m4 / m2^2
  E <- 3 * (n - 1) / (n + 1)
  varb2 <- 24 * n * (n - 2) * (n - 3) / ((n + 1)^2 * (n + 3) * (n + 5))
  xk <- (b2 - E) / sqrt(varb2)
  sqrtbeta1 <- 6 * (n^2 - 5 * n + 2) / ((n + 7) * (n + 9)) * sqrt(6 * (n + 3) * (n + 5) / (n * (n - 2) * (n - 3)))
  A <- 6 + 8 / sqrtbeta1 * (2 / sqrtbeta1 + sqrt(1 + 4 / sqrtbeta1^2))
  term1 <- 1 - 2 / (9 * A)
  denom <- 1 + xk * sqrt(2 / (A - 4))
  term2 <- sign(denom) * ((1 - 2 / A) / abs(denom))^(1 / 3)
  Z2 <- (term1 - term2) / sqrt(2 / (9 * A))
  K2 <- Z1^2 + Z2^2
  list(statistic = K2, p.value = pchisq(K2, 2, lower.tail = FALSE))
}
