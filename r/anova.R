# F tests of fixed-effect terms (lmerTest::anova) with partial eta-squared (effectsize).

# lmerTest's single-model ANOVA table plus effectsize::F_to_eta2 on its F and df columns,
# which is exactly what effectsize::eta_squared(m, partial = TRUE, ci = level,
# alternative = "greater") computes for a lmerModLmerTest fit.
# type: "1", "2" or "3"; ddf: "Satterthwaite" or "Kenward-Roger".
me_anova <- function(m, type = "3", ddf = "Satterthwaite", level = 0.95) {
  a <- stats::anova(m, type = type, ddf = ddf)
  tab <- a
  class(tab) <- "data.frame"
  attr(tab, "heading") <- NULL
  tab <- cbind(data.frame(term = rownames(a), stringsAsFactors = FALSE), tab)
  rownames(tab) <- NULL
  if (nrow(tab) == 0L) return(list(table = NULL))  # intercept-only model: no terms to test
  es <- as.data.frame(effectsize::F_to_eta2(tab[["F value"]], tab[["NumDF"]], tab[["DenDF"]],
                                            ci = level, alternative = "greater"))
  tab <- cbind(tab, es[, c("Eta2_partial", "CI_low", "CI_high")])
  list(table = tab)
}
