// SPDX-License-Identifier: MIT
// What the builder's LocaleCHelper reads (javap of svm.jar 25.0.2: @CStruct("svm_locale_props_t") with
// display_/format_ language, script, country, variant; two @CConstant results of svm_initialize_locale).
#ifndef PREON_SVM_LOCALE_H
#define PREON_SVM_LOCALE_H
#define SVM_LOCALE_INITIALIZATION_SUCCEEDED 0
#define SVM_LOCALE_INITIALIZATION_OUT_OF_MEMORY 1
typedef struct svm_locale_props_t {
    char *display_language;
    char *display_script;
    char *display_country;
    char *display_variant;
    char *format_language;
    char *format_script;
    char *format_country;
    char *format_variant;
} svm_locale_props_t;
int svm_initialize_locale(void);
svm_locale_props_t *svm_get_locale(void);
#endif
