"""Short passages of two real SEC 10-Q filings, as the product extracts and chunks them
(thoth.documents: `extract` + `chunk(..., "blocks")` on /work/shared/data/sec10q/docs), copied
verbatim so the extractive answerer is tested on real text: PDF tables with their period headers,
hard-wrapped sentences with the figures, and the boilerplate every filing repeats."""

from __future__ import annotations

# 2023 Q2 AAPL.pdf, page 4, chunk 5
AAPL_OPERATIONS_PAGE = 4
AAPL_OPERATIONS = "|  | Three Months Ended April 1, 2023 | Three Months Ended March 26, 2022 | Six Months Ended April 1, 2023 | Six Months Ended March 26, 2022 |\n| --- | --- | --- | --- | --- |\n| Net sales: |  |  |  |  |\n| Products | $73,929 | $77,457 | $170,317 | $181,886 |\n| Services | 20,907 | 19,821 | 41,673 | 39,337 |\n| Total net sales | 94,836 | 97,278 | 211,990 | 221,223 |\n| Cost of sales: |  |  |  |  |\n| Products | 46,795 | 49,290 | 107,560 | 113,599 |\n| Services | 6,065 | 5,429 | 12,122 | 10,822 |\n| Total cost of sales | 52,860 | 54,719 | 119,682 | 124,421 |\n| Gross margin | 41,976 | 42,559 | 92,308 | 96,802 |\n| Operating expenses: |  |  |  |  |\n| Research and development | 7,457 | 6,387 | 15,166 | 12,693 |\n| Selling, general and administrative | 6,201 | 6,193 | 12,808 | 12,642 |\n| Total operating expenses | 13,658 | 12,580 | 27,974 | 25,335 |\n| Operating income | 28,318 | 29,979 | 64,334 | 71,467 |\n| Other income/(expense), net | 64 | 160 | (329) | (87) |\n| Income before provision for income taxes | 28,382 | 30,139 | 64,005 | 71,380 |\n| Provision for income taxes | 4,222 | 5,129 | 9,847 | 11,740 |\n| Net income | $24,160 | $25,010 | $54,158 | $59,640 |\n| Earnings per share: |  |  |  |  |\n| Basic | $1.53 | $1.54 | $3.42 | $3.65 |\n| Diluted | $1.52 | $1.52 | $3.41 | $3.62 |\n| Shares used in computing earnings per share: |  |  |  |  |\n| Basic | 15,787,154 | 16,278,802 | 15,839,939 | 16,335,263 |\n| Diluted | 15,847,050 | 16,403,316 | 15,901,384 | 16,461,304 |\n\nSee accompanying Notes to Condensed Consolidated Financial Statements."

# 2023 Q2 AAPL.pdf, page 9, chunk 13
AAPL_BASIS_PAGE = 9
AAPL_BASIS = "########## Notes to Condensed Consolidated Financial Statements (Unaudited)\n\n####### Note 1 – Summary of Significant Accounting Policies\n\n########## Basis of Presentation and Preparation\n\nThe condensed consolidated financial statements include the accounts of Apple Inc. and its wholly owned subsidiaries (collectively “Apple” or the “Company”).\nIntercompany accounts and transactions have been eliminated. In the opinion of the Company’s management, the condensed consolidated financial statements\nreflect all adjustments, which are normal and recurring in nature, necessary for fair financial statement presentation. The preparation of these condensed\nconsolidated financial statements and accompanying notes in conformity with U.S. generally accepted accounting principles requires management to make\nestimates and assumptions that affect the amounts reported. Actual results could differ materially from those estimates. Certain prior period amounts in the\ncondensed consolidated financial statements and accompanying notes have been reclassified to conform to the current period’s presentation. These condensed\nconsolidated financial statements and accompanying notes should be read in conjunction with the Company’s annual consolidated financial statements and\naccompanying notes included in its Annual Report on Form 10-K for the fiscal year ended September 24, 2022."

# 2023 Q2 AAPL.pdf, page 17, chunk 36
AAPL_MDA_INTRO_PAGE = 17
AAPL_MDA_INTRO = "Unless otherwise stated, all information presented herein is based on the Company’s fiscal calendar, and references to particular years, quarters, months or\nperiods refer to the Company’s fiscal years ended in September and the associated quarters, months and periods of those fiscal years. Each of the terms the\n“Company” and “Apple” as used herein refers collectively to Apple Inc. and its wholly owned subsidiaries, unless otherwise stated.\n\nThe following discussion should be read in conjunction with the 2022 Form 10-K filed with the U.S. Securities and Exchange Commission (the “SEC”) and the\ncondensed consolidated financial statements and accompanying notes included in Part I, Item 1 of this Form 10-Q.\n\n########## Available Information\n\nThe Company periodically provides certain information for investors on its corporate website, www.apple.com, and its investor relations website,\ninvestor.apple.com. This includes press releases and other information about financial performance, information on environmental, social and governance\nmatters, and details related to the Company’s annual meeting of shareholders. The information contained on the websites referenced in this Form 10-Q is not\nincorporated by reference into this filing. Further, the Company’s references to website URLs are intended to be inactive textual references only."

# 2023 Q2 AAPL.pdf, page 17, chunk 38
AAPL_HIGHLIGHTS_PAGE = 17
AAPL_HIGHLIGHTS = "########## Quarterly Highlights\n\nWeakness in foreign currencies relative to the U.S. dollar had an unfavorable impact on the Company’s total net sales, which decreased 3% or $2.4 billion during\nthe second quarter of 2023 compared to the same quarter in 2022. The year-over-year net sales decrease consisted primarily of lower net sales of Mac, partially\noffset by higher net sales of Services.\n\nDuring the second quarter of 2023, the Company announced the following new products:\n• MacBook Pro ® 14” and MacBook Pro 16”, powered by the Apple M2 Pro and M2 Max chip;\n• Mac mini ® , powered by the Apple M2 and M2 Pro chip; and\n• Second-generation HomePod ® .\n\nThe Company repurchased $19.1 billion of its common stock and paid dividends and dividend equivalents of $3.7 billion during the second quarter of 2023."

# 2023 Q2 AAPL.pdf, page 18, chunk 39
AAPL_SEGMENTS_PAGE = 18
AAPL_SEGMENTS = "########### Macroeconomic Conditions\n\nMacroeconomic conditions, including inflation, changes in interest rates, and currency fluctuations, have directly and indirectly impacted, and could in the future\nmaterially impact, the Company’s results of operations and financial condition.\n\n########## Segment Operating Performance\n\nThe following table shows net sales by reportable segment for the three- and six-month periods ended April 1, 2023 and March 26, 2022 (dollars in millions):\n\n|  | Three Months Ended April 1, 2023 | Three Months Ended March 26, 2022 | Change | Six Months Ended April 1, 2023 | Six Months Ended March 26, 2022 | Six Months Ended Change |\n| --- | --- | --- | --- | --- | --- | --- |\n| Net sales by reportable segment: |  |  |  |  |  |  |\n| Americas | $37,784 | $40,882 | (8)% | $87,062 | $92,378 | (6)% |\n| Europe | 23,945 | 23,287 | 3% | 51,626 | 53,036 | (3)% |\n| Greater China | 17,812 | 18,343 | (3)% | 41,717 | 44,126 | (5)% |\n| Japan | 7,176 | 7,724 | (7)% | 13,931 | 14,831 | (6)% |\n| Rest of Asia Pacific | 8,119 | 7,042 | 15% | 17,654 | 16,852 | 5% |\n| Total net sales | $94,836 | $97,278 | (3)% | $211,990 | $221,223 | (4)% |\n\n########### Americas\n\nAmericas net sales decreased during the second quarter and first six months of 2023 compared to the same periods in 2022 due primarily to lower net sales of\niPhone and Mac, partially offset by higher net sales of Services."

# 2023 Q2 AAPL.pdf, page 17, chunk 35
AAPL_FORWARD_LOOKING_PAGE = 17
AAPL_FORWARD_LOOKING = "###### Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations\n\nThis section and other parts of this Quarterly Report on Form 10-Q (“Form 10-Q”) contain forward-looking statements, within the meaning of the Private\nSecurities Litigation Reform Act of 1995, that involve risks and uncertainties. Forward-looking statements provide current expectations of future events based on\ncertain assumptions and include any statement that does not directly relate to any historical or current fact. For example, statements in this Form 10-Q regarding\nthe potential future impact of macroeconomic conditions on the Company’s business and results of operations are forward-looking statements . Forward-looking\nstatements can also be identified by words such as “future,” “anticipates,” “believes,” “estimates,” “expects,” “intends,” “plans,” “predicts,” “will,” “would,” “could,”\n“can,” “may,” and similar terms. Forward-looking statements are not guarantees of future performance and the Company’s actual results may differ significantly\nfrom the results discussed in the forward-looking statements. Factors that might cause such differences include, but are not limited to, those discussed in Part I,\nItem 1A of the Company’s Annual Report on Form 10-K for the fiscal year ended September 24, 2022 (the “2022 Form 10-K”) under the heading “Risk Factors.”\nThe Company assumes no obligation to revise or update any forward-looking statements for any reason, except as required by law."

# 2023 Q2 AAPL.pdf, page 23, chunk 53
AAPL_LEGAL_PAGE = 23
AAPL_LEGAL = "##### PART II — OTHER INFORMATION\n\n###### Item 1. Legal Proceedings\n\n########### Epic Games\n\nEpic Games, Inc. (“Epic”) filed a lawsuit in the U.S. District Court for the Northern District of California (the “Northern California District Court”) against the\nCompany alleging violations of federal and state antitrust laws and California’s unfair competition law based upon the Company’s operation of its App Store ® .\nThe Company filed a counterclaim for breach of contract. On September 10, 2021, the Northern California District Court ruled in favor of the Company with\nrespect to nine out of the ten counts included in Epic’s claim, and in favor of the Company with respect to the Company’s claims for breach of contract. The\nNorthern California District Court found that certain provisions of the Company’s App Store Review Guidelines violate California’s unfair competition law and\nissued an injunction. On April 24, 2023, the U.S. Court of Appeals for the Ninth Circuit affirmed the Northern California District Court’s ruling. The Company is\nconsidering further review of the decision."

# 2023 Q2 AAPL.pdf, page 23, chunk 54
AAPL_OTHER_LEGAL_PAGE = 23
AAPL_OTHER_LEGAL = "########### Other Legal Proceedings\n\nThe Company is subject to other legal proceedings and claims that have not been fully resolved and that have arisen in the ordinary course of business. The\nCompany settled certain matters during the second quarter of 2023 that did not individually or in the aggregate have a material impact on the Company’s\nfinancial condition or operating results. The outcome of litigation is inherently uncertain. If one or more legal matters were resolved against the Company in a\nreporting period for amounts above management’s expectations, the Company’s financial condition and operating results for that reporting period could be\nmaterially adversely affected.\n\n###### Item 1A. Risk Factors\n\nThe Company’s business, reputation, results of operations, financial condition and stock price can be affected by a number of factors, whether currently known\nor unknown, including those described in Part I, Item 1A of the 2022 Form 10-K under the heading “Risk Factors.” When any one or more of these risks\nmaterialize from time to time, the Company’s business, reputation, results of operations, financial condition and stock price can be materially and adversely\naffected. There have been no material changes to the Company’s risk factors since the 2022 Form 10-K.\n\n###### Item 2. Unregistered Sales of Equity Securities and Use of Proceeds"

# 2023 Q3 MSFT.pdf, page 15, chunk 33
MSFT_NOTIONAL_PAGE = 15
MSFT_NOTIONAL = "####### Credit-Risk-Related Contingent Features\n\nCertain counterparty agreements for derivative instruments contain provisions that require our issued and outstanding long-term unsecured\ndebt to maintain an investment grade credit rating and require us to maintain minimum liquidity of $1.0 billion. To the extent we fail to meet\nthese requirements, we will be required to post collateral, similar to the standard convention related to over-the-counter derivatives. As of\nSeptember 30, 2023, our long-term unsecured debt rating was AAA, and cash investments were in excess of $1.0 billion. As a result, no\ncollateral was required to be posted.\n\nThe following table presents the notional amounts of our outstanding derivative instruments measured in U.S. dollar equivalents:\n\n|  | September 30, | June 30, |\n| --- | --- | --- |\n| (In millions) | 2023 | 2023 |\n| Designated as Hedging Instruments |  |  |\n| Foreign exchange contracts purchased | $1,492 | $1,492 |\n| Interest rate contracts purchased | 1,084 | 1,078 |\n| Not Designated as Hedging Instruments |  |  |\n| Foreign exchange contracts purchased | 6,957 | 7,874 |\n| Foreign exchange contracts sold | 17,026 | 25,159 |\n| Equity contracts purchased | 3,548 | 3,867 |\n| Equity contracts sold | 2,154 | 2,154 |\n| Other contracts purchased | 1,698 | 1,224 |\n| Other contracts sold | 678 | 581 |"

# 2023 Q3 MSFT.pdf, page 33, chunk 75
MSFT_SUMMARY_PAGE = 33
MSFT_SUMMARY = "| (In millions, except percentages and per share amounts) | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 | Percentage Change |\n| --- | --- | --- | --- |\n| Revenue | $56,517 | $50,122 | 13% |\n| Gross margin | 40,215 | 34,670 | 16% |\n| Operating income | 26,895 | 21,518 | 25% |\n| Net income | 22,291 | 17,556 | 27% |\n| Diluted earnings per share | 2.99 | 2.35 | 27% |"

# 2023 Q3 MSFT.pdf, page 27, chunk 58: a table PDF extraction left as text lines
MSFT_SEGMENTS_PAGE = 27
MSFT_SEGMENTS = "Segment revenue and operating income were as follows during the periods presented:\n\n(In millions)\n\nThree Months Ended September 30, 2023 2022\nRevenue\nProductivity and Business Processes $ 18,592 $ 16,465\nIntelligent Cloud 24,259 20,325\nMore Personal Computing 13,666 13,332\n\nTotal $ 56,517 $ 50,122\n\nOperating Income\nProductivity and Business Processes $ 9,970 $ 8,323\nIntelligent Cloud 11,751 8,978\nMore Personal Computing 5,174 4,217\n\nTotal $ 26,895 $ 21,518\n\nNo sales to an individual customer or country other than the United States accounted for more than 10% of revenue for the three months\nended September 30, 2023 or 2022. Revenue, classified by the major geographic areas in which our customers were located, was as follows:\n\n(In millions)\n\nThree Months Ended September 30, 2023 2022\n(a)\nUnited States $ 28,812 $ 25,867\nOther countries 27,705 24,255\n\nTotal $ 56,517 $ 50,122\n\n(a) Includes billings to OEMs and certain multinational organizations because of the nature of these businesses and the impracticability of\ndetermining the geographic source of the revenue.\n\nRevenue, classified by significant product and service offerings, was as follows:\n\n(In millions)"

# 2023 Q3 INTC.pdf, page 12: a table with nested sections and an unlabelled subtotal
INTEL_SEGMENTS_PAGE = 12
INTEL_SEGMENTS = "Net revenue and operating income (loss) for each period were as follows:\n\n| (In Millions) | Three Months Ended Sep 30, 2023 | Three Months Ended Oct 1, 2022 | Nine Months Ended Sep 30, 2023 | Nine Months Ended Oct 1, 2022 |\n| --- | --- | --- | --- | --- |\n| Net revenue: |  |  |  |  |\n| Client Computing |  |  |  |  |\n| Desktop | $2,753 | $3,222 | $7,002 | $8,152 |\n| Notebook | 4,503 | 4,408 | 11,806 | 15,118 |\n| Other | 611 | 498 | 1,606 | 1,858 |\n|  | 7,867 | 8,128 | 20,414 | 25,128 |\n| Data Center and AI | 3,814 | 4,255 | 11,536 | 15,024 |\n| Network and Edge | 1,450 | 2,133 | 4,303 | 6,483 |\n| Mobileye | 530 | 450 | 1,442 | 1,304 |\n| Intel Foundry Services | 311 | 78 | 661 | 291 |\n| All other | 186 | 294 | 466 | 782 |\n| Total net revenue | $14,158 | $15,338 | $38,822 | $49,012 |\n| Operating income (loss): |  |  |  |  |\n| Client Computing | $2,073 | $1,447 | $3,632 | $5,045 |\n| Data Center and AI | 71 | (139) | (608) | 1,174 |\n| Network and Edge | 17 | 197 | (470) | 907 |\n| Mobileye | 170 | 142 | 422 | 480 |\n| Intel Foundry Services | (86) | (90) | (369) | (247) |\n| All other | (2,253) | (1,732) | (5,099) | (3,893) |\n| Total operating income (loss) | $(8) | $(175) | $(2,492) | $3,466 |"


# The five fragments the engine retrieved, in rank order, for three questions of qna.csv, with
# the heading path each sits under (the extractive answerer reads it).

# In the most recent 10-Q, how does Microsoft's stated tax rate in the financial statements compare with the discussion on tax issues in the notes?

# 2023 Q3 MSFT.pdf, page 20, chunk 42
MSFT_TAX_NOTE_PAGE = 20
MSFT_TAX_NOTE_HEADINGS = ("MICROSOFT CORPORATION", "ITEM 1. FINANCIAL STATEMENTS", "Long-term Debt")
MSFT_TAX_NOTE = "NOTE 10 — INCOME TAXES\n\n###### Effective Tax Rate\n\nOur effective tax rate was 18% and 19% for the three months ended September 30, 2023 and 2022, respectively. The decrease in our\neffective tax rate for the current quarter compared to the prior year was primarily due to tax benefits from tax law changes in the first quarter of\nfiscal year 2024, including the impact from the issuance of Notice 2023-55 by the Internal Revenue Service (“IRS”) and U.S. Treasury\nDepartment, which delayed the effective date of final foreign tax credit regulations to fiscal year 2024 for Microsoft.\n\nOur effective tax rate was lower than the U.S. federal statutory rate for the three months ended September 30, 2023, primarily due to earnings\ntaxed at lower rates in foreign jurisdictions resulting from producing and distributing our products and services through our foreign regional\noperations center in Ireland."

# 2023 Q3 MSFT.pdf, page 19, chunk 39
MSFT_SHORT_TERM_DEBT_PAGE = 19
MSFT_SHORT_TERM_DEBT_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "Fair Values of Derivative Instruments",
)
MSFT_SHORT_TERM_DEBT = "NOTE 9 — DEBT\n\n###### Short-term Debt\n\nAs of September 30, 2023, we had $25.8 billion of commercial paper issued and outstanding, with a weighted average interest rate of 5.4%\nand maturities ranging from 7 days to 190 days. The estimated fair value of this commercial paper approximates its carrying value. As of June\n30, 2023, we had no commercial paper issued or outstanding.\n\n###### Long-term Debt\n\nThe components of long-term debt were as follows:"

# 2023 Q3 MSFT.pdf, page 19, chunk 40
MSFT_DEBT_TABLE_PAGE = 19
MSFT_DEBT_TABLE_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "Long-term Debt",
)
MSFT_DEBT_TABLE = "| (In millions, issuance by calendar year) | Maturities (calendar year) | Stated Interest Rate | Effective Interest Rate | September 30, 2023 | June 30, 2023 |\n| --- | --- | --- | --- | --- | --- |\n| 2009 issuance of $3.8 billion | 2039 | 5.20% | 5.24% | $520 | $520 |\n| 2010 issuance of $4.8 billion | 2040 | 4.50% | 4.57% | 486 | 486 |\n| 2011 issuance of $2.3 billion | 2041 | 5.30% | 5.36% | 718 | 718 |\n| 2012 issuance of $2.3 billion | 2042 | 3.50% | 3.57% | 454 | 454 |\n| 2013 issuance of $5.2 billion | 2023–2043 | 3.63%–4.88% | 3.73%–4.92% | 1,814 | 1,814 |\n| 2013 issuance of €4.1 billion | 2028–2033 | 2.63%–3.13% | 2.69%–3.22% | 2,435 | 2,509 |\n| 2015 issuance of $23.8 billion | 2025–2055 | 2.70%–4.75% | 2.77%–4.78% | 9,805 | 9,805 |\n| 2016 issuance of $19.8 billion | 2026–2056 | 2.40%–3.95% | 2.46%–4.03% | 7,930 | 9,430 |\n| 2017 issuance of $17.0 billion | 2024–2057 | 2.88%–4.50% | 3.04%–4.53% | 8,945 | 8,945 |\n| 2020 issuance of $10.0 billion | 2050–2060 | 2.53%–2.68% | 2.53%–2.68% | 10,000 | 10,000 |\n| 2021 issuance of $8.2 billion | 2052–2062 | 2.92%–3.04% | 2.92%–3.04% | 8,185 | 8,185 |\n| Total face value |  |  |  | 51,292 | 52,866 |\n| Unamortized discount and issuance |  |  |  |  |  |\n| costs |  |  |  | (431) | (438) |\n| (a) |  |  |  |  |  |\n| Hedge fair value adjustments |  |  |  | (109) | (106) |\n| Premium on debt exchange |  |  |  | (5,058) | (5,085) |\n| Total debt |  |  |  | 45,694 | 47,237 |\n| Current portion of long-term debt |  |  |  | (3,748) | (5,247) |\n| Long-term debt |  |  |  | $41,946 | $41,990 |"

# 2023 Q3 MSFT.pdf, page 19, chunk 41
MSFT_DEBT_NOTES_PAGE = 19
MSFT_DEBT_NOTES_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "Long-term Debt",
)
MSFT_DEBT_NOTES = "(a) Refer to Note 5 – Derivatives for further information on the interest rate swaps related to fixed-rate debt.\n\nAs of September 30, 2023 and June 30, 2023, the estimated fair value of long-term debt, including the current portion, was $41.8 billion and\n$46.2 billion, respectively. The estimated fair values are based on Level 2 inputs.\n\nDebt in the table above is comprised of senior unsecured obligations and ranks equally with our other outstanding obligations. Interest is paid\nsemi-annually, except for the Euro-denominated debt, which is paid annually.\n\nThe following table outlines maturities of our long-term debt, including the current portion, as of September 30, 2023:\n\n(In millions)\n\nYear Ending June 30,\n2024 (excluding the three months ended September 30, 2023) $ 3,750\n2025 2,250\n2026 3,000\n2027 8,000\n2028 0\nThereafter 34,292\n\nTotal $ 51,292"

# 2023 Q3 MSFT.pdf, page 5, chunk 7
MSFT_BALANCE_LIABILITIES_PAGE = 5
MSFT_BALANCE_LIABILITIES_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "BALANCE SHEETS",
)
MSFT_BALANCE_LIABILITIES = "|  | September 30, 2023 | June 30, 2023 |\n| --- | --- | --- |\n| Accrued compensation | 6,990 | 11,009 |\n| Short-term income taxes | 8,035 | 4,152 |\n| Short-term unearned revenue | 46,429 | 50,901 |\n| Other current liabilities | 14,475 | 14,745 |\n| Total current liabilities | 124,792 | 104,149 |\n| Long-term debt | 41,946 | 41,990 |\n| Long-term income taxes | 22,983 | 25,560 |\n| Long-term unearned revenue | 2,759 | 2,912 |\n| Deferred income taxes | 470 | 433 |\n| Operating lease liabilities | 13,487 | 12,728 |\n| Other long-term liabilities | 18,634 | 17,981 |\n| Total liabilities | 225,071 | 205,753 |\n| Commitments and contingencies |  |  |\n| Stockholders’ equity: |  |  |\n| Common stock and paid-in capital – shares authorized 24,000; outstanding 7,431 and 7,432 | 95,508 | 93,718 |\n| Retained earnings | 132,143 | 118,848 |\n| Accumulated other comprehensive loss | (6,937) | (6,343) |\n| Total stockholders’ equity | 220,714 | 206,223 |\n| Total liabilities and stockholders’ equity | $445,785 | $411,976 |\n\nRefer to accompanying notes."

# Examine how Intel's effective tax rate in the most recent 10-Q compares with the tax-related discussions in the notes section.

# 2023 Q3 INTC.pdf, page 38, chunk 96
INTC_TAX_MDA_PAGE = 38
INTC_TAX_MDA_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Results of Operations",
    "Provision for (Benefit from) Taxes",
)
INTC_TAX_MDA = "##### Provision for (Benefit from) Taxes\n\n| (In Millions) | Q3 2023 | Q3 2022 | YTD 2023 | YTD 2022 |\n| --- | --- | --- | --- | --- |\n| Income (loss) before taxes | $(52) | $(188) | $(2,026) | $8,564 |\n| Provision for (benefit from) taxes | $(362) | $(1,207) | $(1,041) | $(114) |\n| Effective tax rate | 696.2% | 642.0% | 51.4% | (1.3)% |\n\nIn Q3 2023, we recognized a benefit for taxes as we applied our year-to-date actual effective tax rate to our year-to-date measure of ordinary income (loss) before taxes, which\nreflects our jurisdictional mix of ordinary income and losses. Our effective tax rate increased in YTD 2023 compared to YTD 2022, due to the application of our actual YTD\neffective tax rate, and our jurisdictional mix of ordinary income and losses.\n\nOur provision for, or benefit from, income taxes for an interim period has historically been determined using an estimated annual effective tax rate, adjusted for discrete items, if\nany. Under certain circumstances where we are unable to make a reliable estimate of the annual effective tax rate, we use the actual effective tax rate for the year-to-date period.\nIn YTD 2023, we used this approach due to the variability of the rate as a result of fluctuations in forecasted income and the effects of being taxed in multiple tax jurisdictions."

# 2023 Q3 INTC.pdf, page 15, chunk 35
INTC_TAX_NOTE_PAGE = 15
INTC_TAX_NOTE_HEADINGS = (
    "INTEL CORPORATION",
    "Notes to Consolidated Condensed Financial Statements",
    "Note 7 : Income Taxes",
)
INTC_TAX_NOTE = "#### Note 7 : Income Taxes\n\n| (In Millions) | Three Months Ended Sep 30, 2023 | Three Months Ended Oct 1, 2022 | Nine Months Ended Sep 30, 2023 | Nine Months Ended Oct 1, 2022 |\n| --- | --- | --- | --- | --- |\n| Income (loss) before taxes | $(52) | $(188) | $(2,026) | $8,564 |\n| Provision for (benefit from) taxes | $(362) | $(1,207) | $(1,041) | $(114) |\n| Effective tax rate | 696.2% | 642.0% | 51.4% | (1.3)% |\n\nOur provision for, or benefit from, income taxes for an interim period has historically been determined using an estimated annual effective tax rate, adjusted for discrete items, if\nany. Under certain circumstances where we are unable to make a reliable estimate of the annual effective tax rate, we use the actual effective tax rate for the year-to-date period.\nDuring the first nine months of 2023, we used this approach due to the variability of the rate as a result of fluctuations in forecasted income and the effects of being taxed in\nmultiple tax jurisdictions.\n\n#### Note 8 : Investments"

# 2023 Q3 INTC.pdf, page 41, chunk 105
INTC_NON_GAAP_PAGE = 41
INTC_NON_GAAP_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Results of Operations",
    "Non-GAAP Financial Measures",
)
INTC_NON_GAAP = "Our non-GAAP financial measures reflect adjustments based on one or more of the following items, as well as the related income tax effects. Beginning in 2023, income tax\neffects are calculated using a fixed long-term projected tax rate of 13% across all adjustments. We project this long-term non-GAAP tax rate on an annual basis using a five-year\nnon-GAAP financial projection that excludes the income tax effects of each adjustment. The projected non-GAAP tax rate also considers factors such as our tax structure, our tax\npositions in various jurisdictions, and key legislation in significant jurisdictions where we operate. This long-term non-GAAP tax rate may be subject to change for a variety of\nreasons, including the rapidly evolving global tax environment, significant changes in our geographic earnings mix, or changes to our strategy or business operations.\nManagement uses this non-GAAP tax rate in managing internal short- and long-term operating plans and in evaluating our performance; we believe this approach facilitates\ncomparison of our operating results and provides useful evaluation of our current operating performance. Prior-period non-GAAP financial measures have been retroactively\nadjusted to reflect this updated approach."

# 2023 Q3 INTC.pdf, page 21, chunk 56
INTC_FAIR_VALUE_HEDGES_PAGE = 21
INTC_FAIR_VALUE_HEDGES_HEADINGS = (
    "INTEL CORPORATION",
    "Notes to Consolidated Condensed Financial Statements",
    "Note 12 : Derivative Financial Instruments",
    "Derivatives in Fair Value Hedging Relationships",
    "Cumulative Amount of Fair Value",
)
INTC_FAIR_VALUE_HEDGES = "###### Cumulative Amount of Fair Value\n\nLine Item in the Consolidated Condensed Balance Sheets in Which the Hedged Carrying Amount of the Hedged Item Hedging Adjustment Included in the\nItem is Included Assets/(Liabilities) Carrying Amount Assets/(Liabilities)\n(In Millions) Sep 30, 2023 Dec 31, 2022 Sep 30, 2023 Dec 31, 2022\nLong-term debt $ (11,032) $ (11,221) $ 965 $ 776\n\nThe total notional amount of outstanding pay-variable, receive-fixed interest rate swaps was $12.0 billion as of September 30, 2023 and December 31, 2022.\n\n###### Derivatives Not Designated as Hedging Instruments\n\nThe effects of derivative instruments not designated as hedging instruments on the Consolidated Condensed Statements of Income for each period were as follows:\n\nThree Months Ended Nine Months Ended\n\n###### Location of Gains (Losses)\n\n| (In Millions) | Recognized in Income on Derivatives | Sep 30, 2023 | Oct 1, 2022 | Sep 30, 2023 | Oct 1, 2022 |\n| --- | --- | --- | --- | --- | --- |\n| Foreign currency contracts | Interest and other, net | $255 | $771 | $467 | $1,952 |\n| Interest rate contracts | Interest and other, net | 85 | 164 | 175 | 289 |\n| Other | Various | (112) | (97) | 103 | (562) |\n| Total |  | $228 | $838 | $745 | $1,679 |\n\n#### Note 13 : Contingencies"

# 2023 Q3 INTC.pdf, page 42, chunk 110
INTC_NON_GAAP_RECONCILIATION_PAGE = 42
INTC_NON_GAAP_RECONCILIATION_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Results of Operations",
    "Non-GAAP Financial Measures",
)
INTC_NON_GAAP_RECONCILIATION = "Following are the reconciliations of our most comparable US GAAP measures to our non-GAAP measures presented:\n\n|  | Three Months Ended Sep 30, 2023 | Three Months Ended Oct 1, 2022 |\n| --- | --- | --- |\n| Gross margin percentage | 42.5% | 42.6% |\n| Acquisition-related adjustments | 2.1% | 2.2% |\n| Share-based compensation | 1.2% | 1.1% |\n| Non-GAAP gross margin percentage | 45.8% | 45.9% |\n| Earnings (loss) per share attributable to Intel—diluted | $0.07 | $0.25 |\n| Acquisition-related adjustments | 0.08 | 0.09 |\n| Share-based compensation | 0.18 | 0.19 |\n| Restructuring and other charges | 0.19 | 0.16 |\n| (Gains) losses on equity investments, net | 0.05 | 0.03 |\n| (Gains) losses from divestiture | (0.01) | (0.01) |\n\n| Adjustments attributable to non-controlling interest | — | — |\n| --- | --- | --- |\n| Income tax effects | (0.15) | (0.34) |\n| Non-GAAP earnings (loss) per share attributable to Intel—diluted | $0.41 | $0.37 |\n\n| (In Millions) | Nine Months Ended Sep 30, 2023 | Nine Months Ended Oct 1, 2022 |\n| --- | --- | --- |\n| Net cash provided by (used for) operating activities | $6,847 | $7,730 |\n| Net additions to property, plant, and equipment | (17,299) | (19,089) |\n| Payments on finance leases | (96) | (341) |\n| Sale of equity investment | — | 4,561 |\n| Adjusted free cash flow | $(10,548) | $(7,139) |\n| Net cash used for investing activities | $(18,723) | $(6,990) |\n| Net cash provided by (used for) financing activities | $8,353 | $(1,038) |"

# How significant was the revenue from Intel's data-centric businesses in Q3 2023 relative to total revenue?

# 2023 Q3 INTC.pdf, page 34, chunk 86
INTC_REVENUE_WALK_PAGE = 34
INTC_REVENUE_WALK_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Results of Operations",
    "Revenue",
)
INTC_REVENUE_WALK = "##### Revenue\n\n###### Segment Revenue Walk $B\n\n###### Q3 2023 vs. Q3 2022\n\nOur Q3 2023 revenue was $14.2 billion, down $1.2 billion or 8% from Q3 2022. CCG revenue decreased 3% from Q3 2022 primarily due to lower desktop volume driven by\nlower demand across business market segments and lower notebook ASPs due to a higher mix of small core products attributable to relative strength in the education market\ncombined with a higher mix of older generation products. These decreases were partially offset by higher notebook volume as customer inventory levels began to normalize and\nhigher desktop ASPs due to an increased mix of product sales to the commercial and gaming market segments. DCAI revenue decreased 10% from Q3 2022 due to lower server\nvolume resulting from a softening CPU data center market, partially offset by higher server ASPs from a lower mix of hyperscale customer-related revenue and a higher mix of\nhigh core count products. NEX revenue decreased 32% as customers tempered purchases to reduce inventories and adjust to a lower demand environment across product\nlines."

# 2023 Q3 INTC.pdf, page 5, chunk 11
INTC_QUARTER_REVIEW_PAGE = 5
INTC_QUARTER_REVIEW_HEADINGS = ("INTEL CORPORATION", "A Quarter in Review")
INTC_QUARTER_REVIEW = "## A Quarter in Review\n\nTotal revenue of $14.2 billion was down $1.2 billion or 8% from Q3 2022, as CCG revenue decreased 3%, DCAI revenue decreased 10%, and NEX revenue decreased 32%.\nCCG revenue decreased due to lower desktop volume from lower demand across business market segments and lower notebook ASPs due to a higher mix of small core\nproducts combined with a higher mix of older generation products. This was partially offset by higher notebook volume, as customer inventory levels began to normalize and\nhigher desktop ASPs due to an increased mix of product sales to the commercial and gaming market segments. DCAI revenue decreased due to lower server volume resulting\nfrom a softening CPU data center market, partially offset by higher ASPs from a lower mix of hyperscale customer-related revenue and a higher mix of high core count products.\nNEX revenue decreased as customers tempered purchases to reduce inventories and adjust to a lower demand environment across product lines.\n\nRevenue Gross Margin Diluted EPS attributable to Intel Cash Flows\n■ Operating Cash Flow $B\n■ GAAP $B ■ GAAP ■ Non-GAAP ■ GAAP ■ Non-GAAP ■ Adjusted Free Cash Flow $B"

# 2023 Q3 INTC.pdf, page 28, chunk 78
INTC_DCAI_SUMMARY_PAGE = 28
INTC_DCAI_SUMMARY_HEADINGS = (
    "INTEL CORPORATION",
    "Management's Discussion and Analysis",
    "Data Center and AI",
    "Revenue Summary",
)
INTC_DCAI_SUMMARY = "###### Revenue Summary\n\nQ3 2023 vs. Q3 2022\n\nRevenue was $3.8 billion, down $441 million from Q3 2022, driven by a decrease in server revenue. Server volume decreased 35% in Q3 2023, due to lower demand in a\nsoftening CPU data center market. Server ASPs increased 38% primarily due to a lower mix of hyperscale customer-related revenue and a higher mix of high core count\nproducts.\n\nYTD 2023 vs YTD 2022\n\nRevenue was $11.5 billion, down $3.5 billion from YTD 2022, driven by a decrease in server revenue. Server volume decreased 41% in YTD 2023, due to lower demand in a\nsoftening CPU data center market. Server ASPs increased 17% primarily due to a lower mix of hyperscale customer-related revenue and a higher mix of high core count\nproducts. The decrease in server revenue was partially offset by an increase in revenue from the FPGA product line."

# 2023 Q3 INTC.pdf, page 12, chunk 25
INTC_OPERATING_SEGMENTS_PAGE = 12
INTC_OPERATING_SEGMENTS_HEADINGS = (
    "INTEL CORPORATION",
    "Notes to Consolidated Condensed Financial Statements",
    "Note 2 : Operating Segments",
)
INTC_OPERATING_SEGMENTS = "Net revenue and operating income (loss) for each period were as follows:\n\n| (In Millions) | Three Months Ended Sep 30, 2023 | Three Months Ended Oct 1, 2022 | Nine Months Ended Sep 30, 2023 | Nine Months Ended Oct 1, 2022 |\n| --- | --- | --- | --- | --- |\n| Net revenue: |  |  |  |  |\n| Client Computing |  |  |  |  |\n| Desktop | $2,753 | $3,222 | $7,002 | $8,152 |\n| Notebook | 4,503 | 4,408 | 11,806 | 15,118 |\n| Other | 611 | 498 | 1,606 | 1,858 |\n|  | 7,867 | 8,128 | 20,414 | 25,128 |\n| Data Center and AI | 3,814 | 4,255 | 11,536 | 15,024 |\n| Network and Edge | 1,450 | 2,133 | 4,303 | 6,483 |\n| Mobileye | 530 | 450 | 1,442 | 1,304 |\n| Intel Foundry Services | 311 | 78 | 661 | 291 |\n| All other | 186 | 294 | 466 | 782 |\n| Total net revenue | $14,158 | $15,338 | $38,822 | $49,012 |\n| Operating income (loss): |  |  |  |  |\n| Client Computing | $2,073 | $1,447 | $3,632 | $5,045 |\n| Data Center and AI | 71 | (139) | (608) | 1,174 |\n| Network and Edge | 17 | 197 | (470) | 907 |\n| Mobileye | 170 | 142 | 422 | 480 |\n| Intel Foundry Services | (86) | (90) | (369) | (247) |\n| All other | (2,253) | (1,732) | (5,099) | (3,893) |\n| Total operating income (loss) | $(8) | $(175) | $(2,492) | $3,466 |"

# 2023 Q3 INTC.pdf, page 33, chunk 84
INTC_RESULTS_OF_OPERATIONS_PAGE = 33
INTC_RESULTS_OF_OPERATIONS_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Results of Operations",
)
INTC_RESULTS_OF_OPERATIONS = "## Consolidated Condensed Results of Operations\n\n| (In Millions, Except Per Share Amounts) | Q3 2023 Amount | Three Months Ended Q3 2023 % of Net Revenue | Three Months Ended Q3 2022 Amount | Q3 2022 % of Net Revenue | YTD 2023 Amount | Nine Months Ended YTD 2023 % of Net Revenue | Nine Months Ended YTD 2022 Amount | YTD 2022 % of Net Revenue |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n| Net revenue | $14,158 | 100.0% | $15,338 | 100.0% | $38,822 | 100.0% | $49,012 | 100.0% |\n| Cost of sales | 8,140 | 57.5% | 8,803 | 57.4% | 24,158 | 62.2% | 27,646 | 56.4% |\n| Gross margin | 6,018 | 42.5% | 6,535 | 42.6% | 14,664 | 37.8% | 21,366 | 43.6% |\n| Research and development | 3,870 | 27.3% | 4,302 | 28.0% | 12,059 | 31.1% | 13,064 | 26.7% |\n| Marketing, general, and administrative | 1,340 | 9.5% | 1,744 | 11.4% | 4,017 | 10.3% | 5,296 | 10.8% |\n| Restructuring and other charges | 816 | 5.8% | 664 | 4.3% | 1,080 | 2.8% | (460) | (0.9)% |\n| Operating income (loss) | (8) | (0.1)% | (175) | (1.1)% | (2,492) | (6.4)% | 3,466 | 7.1% |\n| Gains (losses) on equity investments, |  |  |  |  |  |  |  |  |\n| net | (191) | (1.3)% | (151) | (1.0)% | (46) | (0.1)% | 4,082 | 8.3% |"


# 2023 Q3 MSFT.pdf: the five fragments retrieved for the Italian question on share
# repurchases (benchmarks/data/sec10q_questions.yaml), in rank order.
# rank 1: filings:docs/2023 Q3 MSFT.pdf ordinal 94
MSFT_SHARE_REPURCHASES_PAGE = 39
MSFT_SHARE_REPURCHASES_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 2. MANAGEMENT’S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS",
    "Material Cash Requirements and Other Obligations",
    "Share Repurchases",
)
MSFT_SHARE_REPURCHASES = "###### Share Repurchases\n\nFor the three months ended September 30, 2023 and 2022, we repurchased 11 million shares and 17 million shares of our common stock for\n$3.6 billion and $4.6 billion, respectively, through our share repurchase program. All repurchases were made using cash resources. As of\nSeptember 30, 2023, $18.7 billion remained of our $60 billion share repurchase program. Refer to Note 14 – Stockholders’ Equity of the Notes\nto Financial Statements (Part I, Item 1 of this Form 10-Q) for further discussion.\n\n###### Dividends\n\nFor the three months ended September 30, 2023 and 2022, our Board of Directors declared quarterly dividends of $0.75 per share and $0.68\nper share, totaling $5.6 billion and $5.1 billion, respectively. We intend to continue returning capital to shareholders in the form of dividends,\nsubject to declaration by our Board of Directors. Refer to Note 14 – Stockholders’ Equity of the Notes to Financial Statements (Part I, Item 1 of\nthis Form 10-Q) for further discussion."
# rank 2: filings:docs/2023 Q3 MSFT.pdf ordinal 53
MSFT_REPURCHASE_TABLE_PAGE = 24
MSFT_REPURCHASE_TABLE_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "Share Repurchases",
)
MSFT_REPURCHASE_TABLE = "We repurchased the following shares of common stock under the share repurchase program:\n\n(In millions) Shares Amount Shares Amount\n\nFiscal Year 2024 2023\nFirst Quarter 11 $ 3,560 17 $ 4,600\n\nAll repurchases were made using cash resources. All shares repurchased were under the share repurchase program approved on September\n14, 2021. The above table excludes shares repurchased to settle employee tax withholding related to the vesting of stock awards of $1.3\nbillion and $973 million for the first quarter of fiscal years 2024 and 2023, respectively.\n\n###### Dividends\n\nOur Board of Directors declared the following dividends:\n\n| Declaration Date Fiscal Year 2024 | Record Date | Payment Date | Dividend Per Share | Amount (In millions) |\n| --- | --- | --- | --- | --- |\n| September 19, 2023 | November 16, 2023 | December 14, 2023 | $0.75 | $5,573 |\n| Fiscal Year 2023 |  |  |  |  |\n| September 20, 2022 | November 17, 2022 | December 8, 2022 | $0.68 | $5,066 |\n\nThe dividend declared on September 19, 2023 was included in other current liabilities as of September 30, 2023."
# rank 3: filings:docs/2023 Q3 MSFT.pdf ordinal 170
MSFT_MONTHLY_REPURCHASES_PAGE = 58
MSFT_MONTHLY_REPURCHASES_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 2. UNREGISTERED SALES OF EQUITY SECURITIES AND USE OF PROCEEDS",
)
MSFT_MONTHLY_REPURCHASES = "### ITEM 2. UNREGISTERED SALES OF EQUITY SECURITIES AND USE OF PROCEEDS\n\nSHARE REPURCHASES AND DIVIDENDS\n\nFollowing are our monthly share repurchases for the first quarter of fiscal year 2024:\n\nTotal Number Approximate\nof Shares Dollar Value of\nPurchased as Shares That May\n\n| Period | Total Number of Shares Purchased | Average Price Paid Per Share | Part of Publicly Announced Plans or Programs | Yet Be Purchased Under the Plans or Programs (In millions) |\n| --- | --- | --- | --- | --- |\n| July 1, 2023 – July 31, 2023 | 4,176,800 | $341.81 | 4,176,800 | $20,882 |\n| August 1, 2023 – August 31, 2023 | 5,401,235 | 325.01 | 5,401,235 | 19,126 |\n| September 1, 2023 – September 30, 2023 | 1,136,549 | 331.62 | 1,136,549 | 18,749 |\n|  | 10,714,584 |  | 10,714,584 |  |\n\nAll share repurchases were made using cash resources. Our share repurchases may occur through open market purchases or pursuant to a\nRule 10b5-1 trading plan. The above table excludes shares repurchased to settle employee tax withholding related to the vesting of stock\nawards.\n\nOur Board of Directors declared the following dividends during the first quarter of fiscal year 2024:\n\nDividend\nDeclaration Date Record Date Payment Date Per Share Amount\n\n(In millions)\nSeptember 19, 2023 November 16, 2023 December 14, 2023 $ 0.75 $ 5,573"
# rank 4: filings:docs/2023 Q3 MSFT.pdf ordinal 10
MSFT_EQUITY_STATEMENTS_PAGE = 7
MSFT_EQUITY_STATEMENTS_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "STOCKHOLDERS’ EQUITY STATEMENTS",
)
MSFT_EQUITY_STATEMENTS = "###### STOCKHOLDERS’ EQUITY STATEMENTS\n\n(In millions, except per share amounts) (Unaudited)\n\n|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |\n| --- | --- | --- |\n| Common stock and paid-in capital |  |  |\n| Balance, beginning of period | $93,718 | $86,939 |\n| Common stock issued | 685 | 575 |\n| Common stock repurchased | (1,401) | (1,171) |\n| Stock-based compensation expense | 2,507 | 2,192 |\n| Other, net | (1) | 0 |\n| Balance, end of period | 95,508 | 88,535 |\n| Retained earnings |  |  |\n| Balance, beginning of period | 118,848 | 84,281 |\n| Net income | 22,291 | 17,556 |\n| Common stock cash dividends | (5,571) | (5,064) |\n| Common stock repurchased | (3,425) | (4,399) |\n| Balance, end of period | 132,143 | 92,374 |\n| Accumulated other comprehensive loss |  |  |\n| Balance, beginning of period | (6,343) | (4,678) |\n| Other comprehensive loss | (594) | (2,665) |\n| Balance, end of period | (6,937) | (7,343) |\n| Total stockholders’ equity | $220,714 | $173,566 |\n| Cash dividends declared per common share | $0.75 | $0.68 |\n\nRefer to accompanying notes."
# rank 5: filings:docs/2023 Q3 MSFT.pdf ordinal 83
MSFT_SALES_AND_MARKETING_PAGE = 36
MSFT_SALES_AND_MARKETING_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 2. MANAGEMENT’S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS",
    "Sales and Marketing",
)
MSFT_SALES_AND_MARKETING = "Sales and marketing expenses include payroll, employee benefits, stock-based compensation expense, and other headcount-related\nexpenses associated with sales and marketing personnel, and the costs of advertising, promotions, trade shows, seminars, and other\nprograms.\n\n###### Three Months Ended September 30, 2023 Compared with Three Months Ended September 30, 2022\n\nSales and marketing expenses increased $61 million or 1% driven by investments in Gaming.\n\n###### General and Administrative\n\nThree Months Ended Percentage\n(In millions, except percentages) September 30, Change\n\n2023 2022\nGeneral and administrative $ 1,474 $ 1,398 5%\nAs a percent of revenue 3% 3% 0ppt\n\nGeneral and administrative expenses include payroll, employee benefits, stock-based compensation expense, employee severance expense\nincurred as part of a corporate program, and other headcount-related expenses associated with finance, legal, facilities, certain human\nresources and other administrative personnel, certain taxes, and legal and other administrative fees.\n\n###### Three Months Ended September 30, 2023 Compared with Three Months Ended September 30, 2022\n\nGeneral and administrative expenses increased $76 million or 5% driven by legal expenses.\n\nOTHER INCOME (EXPENSE), NET\n\nThe components of other income (expense), net were as follows:\n\n(In millions)"

# 2023 Q3 MSFT.pdf, page 17: a derivatives note and, below it, the inventories note
MSFT_DERIVATIVES_INVENTORIES_PAGE = 17
MSFT_DERIVATIVES_INVENTORIES_HEADINGS = (
    "MICROSOFT CORPORATION",
    "ITEM 1. FINANCIAL STATEMENTS",
    "NOTE 5 — DERIVATIVES",
    "Fair Values of Derivative Instruments",
)
MSFT_DERIVATIVES_INVENTORIES = "Gains (losses) on derivative instruments recognized in other income (expense), net were as follows:\n\n(In millions)\n\n|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |\n| --- | --- | --- |\n| Designated as Fair Value Hedging Instruments |  |  |\n| Interest rate contracts |  |  |\n| Derivatives | $(16) | $(43) |\n| Hedged items | 3 | 43 |\n| Designated as Cash Flow Hedging Instruments |  |  |\n| Foreign exchange contracts |  |  |\n| Amount reclassified from accumulated other comprehensive loss | (46) | (59) |\n| Not Designated as Hedging Instruments |  |  |\n| Foreign exchange contracts | 206 | 240 |\n| Equity contracts | 113 | 12 |\n| Other contracts | (33) | (10) |\n\nGains (losses), net of tax, on derivative instruments recognized in our consolidated comprehensive income statements were as follows:\n\n(In millions)\n\nThree Months Ended September 30, 2023 2022\nDesignated as Cash Flow Hedging Instruments\nForeign exchange contracts\nIncluded in effectiveness assessment $ (15) $ (40)\n\n###### NOTE 6 — INVENTORIES\n\nThe components of inventories were as follows:\n\n(In millions)\n\n|  | September 30, 2023 | June 30, 2023 |\n| --- | --- | --- |\n| Raw materials | $520 | $709 |\n| Work in process | 15 | 23 |\n| Finished goods | 2,465 | 1,768 |\n| Total | $3,000 | $2,500 |"


# 2023 Q3 INTC.pdf: the income statement (ordinal 14), whose "Operating expenses"
# row adds up the three rows above it.
INTC_INCOME_STATEMENT_PAGE = 6
INTC_INCOME_STATEMENT_HEADINGS = (
    "INTEL CORPORATION",
    "Consolidated Condensed Statements of Income",
)
INTC_INCOME_STATEMENT = "## Consolidated Condensed Statements of Income\n\n| (In Millions, Except Per Share Amounts; Unaudited) | Three Months Ended Sep 30, 2023 | Three Months Ended Oct 1, 2022 | Nine Months Ended Sep 30, 2023 | Nine Months Ended Oct 1, 2022 |\n| --- | --- | --- | --- | --- |\n| Net revenue | $14,158 | $15,338 | $38,822 | $49,012 |\n| Cost of sales | 8,140 | 8,803 | 24,158 | 27,646 |\n| Gross margin | 6,018 | 6,535 | 14,664 | 21,366 |\n| Research and development | 3,870 | 4,302 | 12,059 | 13,064 |\n| Marketing, general, and administrative | 1,340 | 1,744 | 4,017 | 5,296 |\n| Restructuring and other charges | 816 | 664 | 1,080 | (460) |\n| Operating expenses | 6,026 | 6,710 | 17,156 | 17,900 |\n| Operating income (loss) | (8) | (175) | (2,492) | 3,466 |\n| Gains (losses) on equity investments, net | (191) | (151) | (46) | 4,082 |\n| Interest and other, net | 147 | 138 | 512 | 1,016 |\n| Income (loss) before taxes | (52) | (188) | (2,026) | 8,564 |\n| Provision for (benefit from) taxes | (362) | (1,207) | (1,041) | (114) |\n| Net income (loss) | 310 | 1,019 | (985) | 8,678 |\n| Less: Net income (loss) attributable to non-controlling interests | 13 | — | (5) | — |\n| Net income (loss) attributable to Intel | $297 | $1,019 | $(980) | $8,678 |\n| Earnings (loss) per share attributable to Intel—basic | $0.07 | $0.25 | $(0.23) | $2.11 |\n| Earnings (loss) per share attributable to Intel—diluted | $0.07 | $0.25 | $(0.23) | $2.10 |\n| Weighted average shares of common stock outstanding: |  |  |  |  |\n| Basic | 4,202 | 4,118 | 4,180 | 4,104 |\n| Diluted | 4,229 | 4,125 | 4,180 | 4,123 |\n\nSee accompanying notes.\n\nFinancial Statements Consolidated Condensed Statements of Income 4"
